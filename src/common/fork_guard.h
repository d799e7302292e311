// What a background sender thread (Slack alerts, metrics and traces) holds while it is inside
// libcurl, OpenSSL, a socket call or a log sink, and what fork() takes first, through
// pthread_atfork handlers: a child is then never made while such a thread holds a lock in there.
// A lock held at fork() would stay held for ever in the child, which has no copy of the thread to
// release it (the process runner's producer would hang at its first log line or connection).
// A fork therefore waits for a delivery in flight, at most that delivery's own timeouts.
#pragma once

#include <mutex>

namespace bizon {

/// The guard a sender holds around each delivery. The first call registers the fork handlers.
std::mutex& SenderForkGuard();

/// True in a child made by fork() after SenderForkGuard() was first used: no sender thread runs
/// there, so what would be queued for one is dropped instead.
bool InForkedChild();

}  // namespace bizon
