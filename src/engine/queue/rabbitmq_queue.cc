#include "engine/queue/rabbitmq_queue.h"

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/time.h>

#include <algorithm>
#include <deque>
#include <thread>

namespace bizon {
namespace {

constexpr amqp_channel_t kChannel = 1;

Status RabbitError(std::string what, StatusCode code = StatusCode::kUnavailable) {
  return Status(code, "rabbitmq queue: " + std::move(what), FailureClass::kQueue);
}

amqp_bytes_t Bytes(std::string_view text) { return {text.size(), const_cast<char*>(text.data())}; }

std::string_view Text(amqp_bytes_t bytes) {
  return {static_cast<const char*>(bytes.bytes), bytes.len};
}

timeval ToTimeval(std::chrono::milliseconds timeout) {
  int64_t ms = std::max<int64_t>(0, timeout.count());
  return {static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
}

/// What went wrong in an RPC reply, for messages.
std::string Describe(const amqp_rpc_reply_t& reply) {
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      return "ok";
    case AMQP_RESPONSE_NONE:
      return "no reply";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      return amqp_error_string2(reply.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        auto* close = static_cast<amqp_connection_close_t*>(reply.reply.decoded);
        return fmt::format("server closed the connection: {} {}", close->reply_code,
                           Text(close->reply_text));
      }
      if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        auto* close = static_cast<amqp_channel_close_t*>(reply.reply.decoded);
        return fmt::format("server closed the channel: {} {}", close->reply_code,
                           Text(close->reply_text));
      }
      return fmt::format("server error (method {:#x})", reply.reply.id);
  }
  return "unknown error";
}

/// One AMQP connection with channel 1 open and the queue declared. Not thread-safe.
class Connection {
 public:
  explicit Connection(RabbitmqQueueConfig config) : config_(std::move(config)) {}
  ~Connection() { Close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool open() const { return state_ != nullptr; }
  amqp_connection_state_t state() { return state_; }
  const RabbitmqQueueConfig& config() const { return config_; }

  /// Connects, logs in, opens the channel and declares the durable queue (idempotent).
  Status Open() {
    Close();
    state_ = amqp_new_connection();
    const RabbitmqTlsConfig& tls = config_.tls;
    amqp_socket_t* socket = tls.enabled ? amqp_ssl_socket_new(state_) : amqp_tcp_socket_new(state_);
    if (socket == nullptr) return Broken("cannot create a socket");
    if (tls.enabled) BIZON_RETURN_IF_ERROR(SetUpTls(socket));
    timeval connect_timeout{5, 0};
    int opened =
        amqp_socket_open_noblock(socket, config_.host.c_str(), config_.port, &connect_timeout);
    if (opened != AMQP_STATUS_OK) {
      // A certificate either side refuses will not be accepted on a retry.
      bool refused = opened == AMQP_STATUS_SSL_PEER_VERIFY_FAILED ||
                     opened == AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED;
      return Broken(fmt::format("cannot connect to {}:{}{}: {}", config_.host, config_.port,
                                tls.enabled ? " over TLS" : "", amqp_error_string2(opened)),
                    refused ? StatusCode::kFailedPrecondition : StatusCode::kUnavailable);
    }
    timeval rpc_timeout{30, 0};
    amqp_set_rpc_timeout(state_, &rpc_timeout);
    // No heartbeats: rabbitmq-c only services them inside its own calls, and a producer paused
    // by back-pressure makes none for minutes. A broker that goes away closes the socket.
    amqp_rpc_reply_t login =
        amqp_login(state_, config_.vhost.c_str(), 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                   config_.username.c_str(), config_.password.c_str());
    if (login.reply_type != AMQP_RESPONSE_NORMAL) {
      return Broken(
          fmt::format("cannot log in to {}:{}{} as {}: {}", config_.host, config_.port,
                      config_.tls.enabled ? " over TLS" : "", config_.username, Describe(login)),
          login.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION ? StatusCode::kFailedPrecondition
                                                             : StatusCode::kUnavailable);
    }
    amqp_channel_open(state_, kChannel);
    BIZON_RETURN_IF_ERROR(Check("open a channel"));
    amqp_queue_declare(state_, kChannel, Bytes(config_.queue_name), 0, /*durable=*/1, 0, 0,
                       amqp_empty_table);
    BIZON_RETURN_IF_ERROR(Check(fmt::format("declare the durable queue {}", config_.queue_name)));
    if (!config_.exchange.empty()) {
      amqp_queue_bind(state_, kChannel, Bytes(config_.queue_name), Bytes(config_.exchange),
                      Bytes(config_.queue_name), amqp_empty_table);
      BIZON_RETURN_IF_ERROR(
          Check(fmt::format("bind queue {} to exchange {}", config_.queue_name, config_.exchange)));
    }
    return Status::Ok();
  }

  /// The result of the last RPC; closes the connection when it failed.
  Status Check(std::string_view what) {
    amqp_rpc_reply_t reply = amqp_get_rpc_reply(state_);
    if (reply.reply_type == AMQP_RESPONSE_NORMAL) return Status::Ok();
    bool refused = reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION;
    return Broken(fmt::format("cannot {}: {}", what, Describe(reply)),
                  refused ? StatusCode::kFailedPrecondition : StatusCode::kUnavailable);
  }

  /// The trust, client certificate and checks of a TLS socket (queue.tls).
  Status SetUpTls(amqp_socket_t* socket) {
    const RabbitmqTlsConfig& tls = config_.tls;
    amqp_ssl_socket_set_verify_peer(socket, tls.verify_peer ? 1 : 0);
    amqp_ssl_socket_set_verify_hostname(socket, tls.verify_hostname ? 1 : 0);
    if (!tls.ca_certificate.empty()) {
      if (int status = amqp_ssl_socket_set_cacert(socket, tls.ca_certificate.c_str());
          status != AMQP_STATUS_OK) {
        return Broken(fmt::format("cannot read queue.tls.ca_certificate {}: {}", tls.ca_certificate,
                                  amqp_error_string2(status)),
                      StatusCode::kInvalidArgument);
      }
    }
    if (tls.client_certificate.empty() != tls.client_key.empty()) {
      return Broken("queue.tls.client_certificate and queue.tls.client_key go together",
                    StatusCode::kInvalidArgument);
    }
    if (!tls.client_certificate.empty()) {
      if (int status = amqp_ssl_socket_set_key(socket, tls.client_certificate.c_str(),
                                               tls.client_key.c_str());
          status != AMQP_STATUS_OK) {
        return Broken(
            fmt::format("cannot use queue.tls.client_certificate {} with its key {}: {}",
                        tls.client_certificate, tls.client_key, amqp_error_string2(status)),
            StatusCode::kInvalidArgument);
      }
    }
    return Status::Ok();
  }

  /// Drops the connection after an error and returns that error.
  Status Broken(std::string what, StatusCode code = StatusCode::kUnavailable) {
    Close();
    return RabbitError(std::move(what), code);
  }

  void Close() {
    if (state_ == nullptr) return;
    // Best effort: after a failure the peer may be gone already.
    amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(state_);
    state_ = nullptr;
  }

 private:
  RabbitmqQueueConfig config_;
  amqp_connection_state_t state_ = nullptr;
};

class RabbitmqSender final : public BrokerSender {
 public:
  explicit RabbitmqSender(RabbitmqQueueConfig config) : connection_(std::move(config)) {}

  Status Connect() {
    BIZON_RETURN_IF_ERROR(connection_.Open());
    amqp_confirm_select(connection_.state(), kChannel);
    BIZON_RETURN_IF_ERROR(connection_.Check("enable publisher confirms"));
    next_tag_ = 1;
    return Status::Ok();
  }

  Status Send(std::string_view key, const std::vector<std::string>& frames) override {
    (void)key;  // One queue: order is the queue's.
    const auto& config = connection_.config();
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(config.publish_timeout_ms);
    Status last = Status::Ok();
    for (int attempt = 0;; ++attempt) {
      if (!connection_.open()) {
        last = Connect();
        if (last.code() == StatusCode::kFailedPrecondition) return last;  // Refused: no retry.
      }
      if (connection_.open()) {
        last = PublishAndConfirm(frames);
        if (last.ok()) {
          if (attempt > 0) spdlog::info("Queue: RabbitMQ publishing resumed");
          return last;
        }
        if (last.code() == StatusCode::kFailedPrecondition) return last;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return RabbitError(fmt::format("gave up publishing to queue {} after {} ms: {}",
                                       config.queue_name, config.publish_timeout_ms,
                                       last.message()));
      }
      if (attempt == 0) {
        spdlog::warn("Queue: RabbitMQ unavailable ({}); retrying", last.message());
      }
      // Frames of an unconfirmed attempt may have reached the queue: the consumer skips the
      // duplicates by iteration.
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::min(200 << std::min(attempt, 4), 2000)));
    }
  }

  size_t max_frame_bytes() const override {
    return static_cast<size_t>(connection_.config().max_message_bytes);
  }

 private:
  Status PublishAndConfirm(const std::vector<std::string>& frames) {
    const auto& config = connection_.config();
    amqp_basic_properties_t properties{};
    properties._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
    properties.delivery_mode = 2;  // Persistent: written to disk before the confirm.
    properties.content_type = amqp_cstring_bytes("application/x-bizon-frame");
    uint64_t last_tag = 0;
    for (const std::string& frame : frames) {
      int published = amqp_basic_publish(connection_.state(), kChannel, Bytes(config.exchange),
                                         Bytes(config.queue_name), /*mandatory=*/1, 0, &properties,
                                         Bytes(frame));
      if (published != AMQP_STATUS_OK) {
        return connection_.Broken(fmt::format("cannot publish to {}: {}", config.queue_name,
                                              amqp_error_string2(published)));
      }
      last_tag = next_tag_++;
    }
    return WaitForConfirms(last_tag);
  }

  /// Reads frames until the broker confirmed every tag up to `last_tag`.
  Status WaitForConfirms(uint64_t last_tag) {
    const auto& config = connection_.config();
    while (confirmed_ < last_tag) {
      amqp_frame_t frame;
      timeval timeout{30, 0};
      int got = amqp_simple_wait_frame_noblock(connection_.state(), &frame, &timeout);
      if (got != AMQP_STATUS_OK) {
        return connection_.Broken(
            fmt::format("no confirm from the broker: {}", amqp_error_string2(got)));
      }
      if (frame.frame_type != AMQP_FRAME_METHOD) continue;
      switch (frame.payload.method.id) {
        case AMQP_BASIC_ACK_METHOD: {
          auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
          confirmed_ = std::max(confirmed_, ack->delivery_tag);
          break;
        }
        case AMQP_BASIC_NACK_METHOD:
          return connection_.Broken(
              fmt::format("the broker refused a message for queue {}", config.queue_name));
        case AMQP_BASIC_RETURN_METHOD:
          // Unroutable (the exchange is not bound to the queue). The ack that follows does not
          // make it stored, so this attempt fails.
          return connection_.Broken(
              fmt::format("exchange '{}' did not route the message to queue {}", config.exchange,
                          config.queue_name),
              StatusCode::kFailedPrecondition);
        case AMQP_CHANNEL_CLOSE_METHOD:
        case AMQP_CONNECTION_CLOSE_METHOD:
          return connection_.Broken("the broker closed the connection");
        default:
          break;
      }
    }
    amqp_maybe_release_buffers(connection_.state());
    return Status::Ok();
  }

  Connection connection_;
  uint64_t next_tag_ = 1;
  uint64_t confirmed_ = 0;

  friend Result<std::unique_ptr<BrokerSender>> bizon::OpenRabbitmqSender(
      const RabbitmqQueueConfig& config);
};

class RabbitmqReceiver final : public BrokerReceiver {
 public:
  explicit RabbitmqReceiver(RabbitmqQueueConfig config)
      : connection_(std::move(config)), prefetch_(connection_.config().prefetch_count) {}

  Status Connect() {
    BIZON_RETURN_IF_ERROR(connection_.Open());
    unacked_.clear();
    unacked_bytes_ = 0;
    prefetch_ = std::clamp(connection_.config().prefetch_count, 1, 65535);
    // Channel-wide (global): RabbitMQ applies a per-consumer limit only to consumers started
    // after it, while a channel's limit can be raised under a running consumer. The channel has
    // this one consumer, so both mean the same.
    amqp_basic_qos(connection_.state(), kChannel, 0, static_cast<uint16_t>(prefetch_),
                   /*global=*/1);
    BIZON_RETURN_IF_ERROR(connection_.Check("set the prefetch"));
    amqp_basic_consume(connection_.state(), kChannel, Bytes(connection_.config().queue_name),
                       amqp_empty_bytes, 0, /*no_ack=*/0, 0, amqp_empty_table);
    BIZON_RETURN_IF_ERROR(
        connection_.Check(fmt::format("consume queue {}", connection_.config().queue_name)));
    ++session_;
    return Status::Ok();
  }

  Result<std::optional<ReceivedFrame>> Receive(std::chrono::milliseconds timeout) override {
    if (!connection_.open()) {
      Status reconnected = Connect();
      if (!reconnected.ok()) {
        if (reconnected.code() == StatusCode::kFailedPrecondition) return Fail(reconnected);
        if (!outage_logged_) {
          spdlog::warn("Queue: RabbitMQ unavailable ({}); retrying", reconnected.message());
          outage_logged_ = true;
        }
        std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(500)));
        return std::optional<ReceivedFrame>();
      }
      if (outage_logged_) spdlog::info("Queue: RabbitMQ consumer reconnected");
      outage_logged_ = false;
    }
    amqp_maybe_release_buffers(connection_.state());
    amqp_envelope_t envelope;
    timeval wait = ToTimeval(timeout);
    amqp_rpc_reply_t reply = amqp_consume_message(connection_.state(), &envelope, &wait, 0);
    if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        reply.library_error == AMQP_STATUS_TIMEOUT) {
      return std::optional<ReceivedFrame>();
    }
    if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
      // A channel or connection close, a cancelled consumer (queue deleted), a lost socket:
      // start a new session; the broker requeues what was not acknowledged.
      connection_.Close();
      spdlog::warn("Queue: lost the RabbitMQ connection ({}); reconnecting", Describe(reply));
      return std::optional<ReceivedFrame>();
    }
    ReceivedFrame frame{
        .bytes = std::string(Text(envelope.message.body)),
        .position = {.lane = 0, .offset = static_cast<int64_t>(envelope.delivery_tag)}};
    amqp_destroy_envelope(&envelope);
    unacked_.emplace_back(frame.position.offset, frame.bytes.size());
    unacked_bytes_ += frame.bytes.size();
    GrowPrefetch();
    return std::optional<ReceivedFrame>(std::move(frame));
  }

  Status Acknowledge(const FramePosition& position) override {
    if (!connection_.open()) return Status::Ok();  // Void: redelivered to the next session.
    int acked = amqp_basic_ack(connection_.state(), kChannel,
                               static_cast<uint64_t>(position.offset), /*multiple=*/1);
    if (acked != AMQP_STATUS_OK) {
      // The frames come again on the next connection and are skipped as already delivered.
      spdlog::warn("Queue: cannot acknowledge RabbitMQ messages: {}", amqp_error_string2(acked));
      connection_.Close();
      return Status::Ok();
    }
    while (!unacked_.empty() && unacked_.front().first <= position.offset) {
      unacked_bytes_ -= unacked_.front().second;
      unacked_.pop_front();
    }
    return Status::Ok();
  }

  uint64_t session() const override { return session_; }

 private:
  /// The destination may buffer more frames than the prefetch allows unacknowledged: raise it
  /// while they are small, so the buffer fills; the byte bound keeps the broker's push bounded.
  void GrowPrefetch() {
    if (static_cast<int>(unacked_.size()) + 1 < prefetch_ || prefetch_ >= 65535) return;
    if (static_cast<int64_t>(unacked_bytes_) >= connection_.config().consumer_prefetch_bytes) {
      return;
    }
    prefetch_ = std::min(65535, prefetch_ * 2);
    amqp_basic_qos(connection_.state(), kChannel, 0, static_cast<uint16_t>(prefetch_),
                   /*global=*/1);
    // The reply may sit behind deliveries already in flight; amqp_basic_qos waits for it and
    // keeps those deliveries for amqp_consume_message.
    if (!connection_.Check("raise the prefetch").ok()) ++session_;
    spdlog::debug("Queue: RabbitMQ prefetch raised to {}", prefetch_);
  }

  Connection connection_;
  int prefetch_;
  uint64_t session_ = 0;
  bool outage_logged_ = false;
  std::deque<std::pair<int64_t, size_t>> unacked_;
  size_t unacked_bytes_ = 0;
};

}  // namespace

Result<std::unique_ptr<BrokerSender>> OpenRabbitmqSender(const RabbitmqQueueConfig& config) {
  auto sender = std::make_unique<RabbitmqSender>(config);
  BIZON_RETURN_IF_ERROR(sender->Connect());
  return std::unique_ptr<BrokerSender>(std::move(sender));
}

Result<std::unique_ptr<BrokerReceiver>> OpenRabbitmqReceiver(const RabbitmqQueueConfig& config) {
  auto receiver = std::make_unique<RabbitmqReceiver>(config);
  BIZON_RETURN_IF_ERROR(receiver->Connect());
  return std::unique_ptr<BrokerReceiver>(std::move(receiver));
}

}  // namespace bizon
