"""An independent gRPC peer (python3-grpcio, C-core) for the node:http2 transport's interop tests.

server: serves /envoy.service.ext_proc.v3.ExternalProcessor/Process with raw bytes and prints
        its port. Each request message is echoed back upper-cased; b"fail" ends the call with
        INVALID_ARGUMENT and a message that needs percent-encoding; b"hang" stops answering.
client ADDRESS: calls our server and prints one JSON line of what it saw.
"""
import json
import sys
import time

import grpc

PROCESS = "/envoy.service.ext_proc.v3.ExternalProcessor/Process"
CHECK = "/grpc.health.v1.Health/Check"


def process(request_iterator, context):
    for msg in request_iterator:
        if msg == b"fail":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad input: 100% wrong \u00fc")
        if msg == b"hang":
            time.sleep(30)
        yield msg.upper()


def serve():
    from concurrent import futures

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handler = grpc.method_handlers_generic_handler(
        "envoy.service.ext_proc.v3.ExternalProcessor",
        {"Process": grpc.stream_stream_rpc_method_handler(process)},
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()  # until the test closes our stdin
    server.stop(0)


def client(address):
    out = {}
    with grpc.insecure_channel(address) as channel:
        call = channel.stream_stream(PROCESS, request_serializer=None, response_deserializer=None)
        out["echo"] = [m.decode() for m in call(iter([b"one", b"two", b"x" * 70000]), timeout=10)][:2]
        try:
            list(call(iter([b"ok", b"fail"]), timeout=10))
            out["fail"] = None
        except grpc.RpcError as e:
            out["fail"] = [e.code().name, e.details()]
        try:
            list(call(iter([b"hang"]), timeout=0.5))
            out["deadline"] = None
        except grpc.RpcError as e:
            out["deadline"] = e.code().name
        unknown = channel.stream_stream("/no.such.Service/Method", request_serializer=None, response_deserializer=None)
        try:
            list(unknown(iter([b"x"]), timeout=10))
            out["unknown"] = None
        except grpc.RpcError as e:
            out["unknown"] = e.code().name
        check = channel.unary_unary(CHECK, request_serializer=None, response_deserializer=None)
        out["health"] = check(b"", timeout=10).hex()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve()
    else:
        client(sys.argv[2])
