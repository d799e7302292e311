#!/usr/bin/env python3
"""Writes the binary seed inputs of fuzz/corpus/ (Avro bodies and queue frames).

The text seeds (YAML pipelines, JSON pages) are edited by hand; these are easier to get right
from code. Run it again after changing the layouts it mirrors: engine/queue/queue_message.cc,
engine/queue/broker_frame.cc, engine/frame_io.cc and the fixed schema of fuzz_avro_decoder.cc.
"""
import json
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent


def zigzag(n):
    """Avro's variable-length zig-zag long."""
    n = (n << 1) ^ (n >> 63)
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def avro_bytes(data):
    return zigzag(len(data)) + data


def fixed_schema_event(next_event=None, tags=(b"a", b"b")):
    """A body for the fixed schema of fuzz_avro_decoder.cc, field by field."""
    out = bytearray()
    out += b"\x01"                                   # flag
    out += zigzag(-42)                               # count
    out += zigzag(1 << 40)                           # total
    out += struct.pack("<f", 1.5)                    # ratio
    out += struct.pack("<d", float("nan"))          # score
    out += avro_bytes(b"\x00\xff\x80")               # blob
    out += avro_bytes("é€".encode())                 # label
    out += zigzag(1)                                 # color
    out += b"\xde\xad\xbe\xef"                       # digest
    out += zigzag(len(tags)) + b"".join(avro_bytes(t) for t in tags) + zigzag(0)
    out += zigzag(-1) + zigzag(4) + avro_bytes(b"k") + zigzag(1) + zigzag(7) + zigzag(0)
    out += zigzag(1706702400123)                     # at
    out += zigzag(-1)                                # at_us
    out += zigzag(0)                                 # local
    out += zigzag(19753)                             # day
    out += zigzag(43200123)                          # time
    out += zigzag(86399999999)                       # time_us
    out += avro_bytes(b"\xfb\x2e")                   # price: -1234 -> -12.34
    out += b"\x00\x30\x39"                           # amount: 12345 -> 1234.5
    out += zigzag(3) + zigzag(0)                     # nothing: three nulls
    if next_event is None:
        out += zigzag(0)
    else:
        out += zigzag(1) + next_event
    return bytes(out)


def avro_seeds():
    yield "fixed_schema_event.bin", fixed_schema_event()
    yield "fixed_schema_nested.bin", fixed_schema_event(fixed_schema_event(tags=()))
    yield "fixed_schema_truncated.bin", fixed_schema_event()[:20]
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"]},
        {"name": "scores", "type": {"type": "map", "values": "double"}}]}
    body = zigzag(7) + zigzag(1) + avro_bytes(b"bob") + zigzag(1) + avro_bytes(b"x") + \
        struct.pack("<d", 0.25) + zigzag(0)
    yield "schema_record.bin", json.dumps(schema).encode() + b"\0" + body
    yield "schema_string.bin", b'"string"\0' + avro_bytes(b"\xc3\x28 invalid utf-8")
    yield "schema_union.bin", b'["null","int",{"type":"array","items":"long"}]\0' + \
        zigzag(2) + zigzag(2) + zigzag(1) + zigzag(-1) + zigzag(0)
    linked = {"type": "record", "name": "Node", "namespace": "n", "fields": [
        {"name": "value", "type": "int"},
        {"name": "next", "type": ["null", "n.Node"]}]}
    yield "schema_recursive.bin", json.dumps(linked).encode() + b"\0" + \
        zigzag(1) + zigzag(1) + zigzag(2) + zigzag(0)
    decimal = {"type": "fixed", "name": "D", "size": 2, "logicalType": "decimal",
               "precision": 4, "scale": 4}
    yield "schema_decimal_fixed.bin", json.dumps(decimal).encode() + b"\0" + b"\x80\x00"
    yield "schema_enum.bin", b'{"type":"enum","name":"E","symbols":["A","B"]}\0' + zigzag(5)


def put_int(value):
    return struct.pack("<q", value)


def put_bytes(data):
    return put_int(len(data)) + data


def queue_message(kind=0, iteration=0, records=(), pagination=b"{}", state=b"",
                  exhausted=1, code=0, failure_class=0, error=b"", producer_status=b""):
    """EncodeMessage of engine/queue/queue_message.cc."""
    out = put_int(0x6E6F7A696201) + put_int(kind) + put_int(iteration)
    out += put_int(1706702400000000) + put_int(exhausted)
    out += put_bytes(pagination) + put_bytes(state)
    out += put_int(code) + put_int(failure_class) + put_bytes(error) + put_bytes(producer_status)
    out += put_int(len(records))
    for record_id, payload, timestamp, destination in records:
        out += put_bytes(record_id) + put_bytes(payload) + put_int(timestamp)
        out += put_bytes(destination)
    return out


def broker_frames(message, job_id=b"job-1", kind=0, iteration=0, room=40):
    """SplitIntoFrames of engine/queue/broker_frame.cc."""
    parts = max(1, (len(message) + room - 1) // room)
    for part in range(parts):
        header = b"BZF1" + struct.pack("<H", len(job_id)) + job_id
        header += struct.pack("<BqII", kind, iteration, part, parts)
        yield header + message[part * room:(part + 1) * room]


def pipe_frames(*frames):
    """WriteFrame of engine/frame_io.cc: an 8-byte host-order (little-endian here) size."""
    return b"".join(struct.pack("<Q", len(frame)) + frame for frame in frames)


def queue_seeds():
    data = queue_message(iteration=3, pagination=b'{"cursor":"abc","page":2}',
                         state=b'{"offsets":{"0":12}}',
                         records=[(b"1", b'{"id":1}', 1706702400000001, b""),
                                  (b"2", b'{"id":2,"name":"\\u00e9"}', 0, b"table_b")])
    end = queue_message(kind=1, iteration=4, exhausted=0)
    failed = queue_message(kind=2, code=3, failure_class=2, error=b"the API said 503",
                           producer_status=b"failed")
    yield "message_data.bin", data
    yield "message_termination.bin", end
    yield "message_error.bin", failed
    yield "message_truncated.bin", data[:-5]
    yield "pipe_messages.bin", pipe_frames(data, end)
    yield "pipe_broker_frames.bin", pipe_frames(*broker_frames(data, iteration=3))
    frames = list(broker_frames(data, iteration=3))
    yield "pipe_broker_redelivery.bin", pipe_frames(frames[0], frames[1], frames[0], *frames[1:])
    yield "pipe_cut_short.bin", pipe_frames(data)[:-3]


def main():
    for target, seeds in (("fuzz_avro_decoder", avro_seeds()), ("fuzz_queue_frames", queue_seeds())):
        directory = HERE / target
        directory.mkdir(exist_ok=True)
        for name, data in seeds:
            (directory / name).write_bytes(data)


if __name__ == "__main__":
    main()
