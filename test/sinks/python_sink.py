"""A CloudEvents sink as many users write one: the CloudEvents Python SDK over the standard library's
ThreadingHTTPServer, which listens with socketserver's default backlog of 5.

Prints one line per event it accepts, `<id>\t<kafka offset extension or ->`, then answers 202. Options:
  --host ADDRESS   the address to listen on (default 127.0.0.1)
  --port N         0 (default): any free port; the chosen port is printed first as `listening <port>`
  --delay-ms N     wait before answering (default 0)
  --slow-every N   every Nth request waits --slow-ms instead (default: never)
  --slow-ms N      the long wait (default 30000)
  --backlog N      the listen backlog (default: socketserver's 5)
  --close          answer with `Connection: close`
  --stall-ms N     listen, but accept nothing for N ms first (its accept queue overflows meanwhile)
  --print-data     add two fields to each accepted event's line: its data as text, and the sender's address
  --trace          also print a line as each event arrives: `>\t` and its attributes and extensions as JSON
  --trace-data     with --trace, add `_data` (the data as text: JSON re-encoded compactly) and `_headers` (the
                   request's headers, names in lower case)
  --tls-cert FILE  serve https: the server's certificate chain (PEM); needs --tls-key
  --tls-key FILE   the certificate's private key (PEM)
"""
import argparse
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cloudevents.http import from_http

parser = argparse.ArgumentParser()
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--delay-ms", type=float, default=0)
parser.add_argument("--slow-every", type=int, default=0)
parser.add_argument("--slow-ms", type=float, default=30000)
parser.add_argument("--backlog", type=int, default=0)
parser.add_argument("--close", action="store_true")
parser.add_argument("--stall-ms", type=float, default=0)
parser.add_argument("--print-data", action="store_true")
parser.add_argument("--trace", action="store_true")
parser.add_argument("--trace-data", action="store_true")
parser.add_argument("--tls-cert")
parser.add_argument("--tls-key")
args = parser.parse_args()
if (args.tls_cert is None) != (args.tls_key is None):
    parser.error("--tls-cert and --tls-key go together")

tls = None
if args.tls_cert:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(args.tls_cert, args.tls_key)

lock = threading.Lock()
count = 0
out = sys.stdout


def text_of(data):
    """An event's data as one line of text: bytes decoded, anything else (parsed JSON) encoded compactly."""
    if isinstance(data, (bytes, bytearray)):
        return data.decode("utf-8", "replace")
    if data is None or isinstance(data, str):
        return data or ""
    return json.dumps(data, separators=(",", ":"))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK samples that use ThreadingHTTPServer

    def setup(self):
        # The handshake runs on the connection's own thread, not in the accept loop (see the wrap below).
        if tls is not None:
            self.request.do_handshake()
        super().setup()

    def do_POST(self):
        global count
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length) if length else b""
        try:
            event = from_http(dict(self.headers), body)
        except Exception as error:  # a request that is not a CloudEvent
            self.send_response(400)
            self.send_header("content-length", "0")
            self.end_headers()
            print(f"bad\t{error}", file=sys.stderr, flush=True)
            return
        with lock:
            count += 1
            n = count
            if args.trace:
                attributes = {k: v.isoformat() if hasattr(v, "isoformat") else str(v) for k, v in event.get_attributes().items()}
                if args.trace_data:
                    data = event.get_data()
                    attributes["_data"] = None if data is None else text_of(data)
                    attributes["_headers"] = {k.lower(): v for k, v in self.headers.items()}
                out.write(f">\t{json.dumps(attributes)}\n")
                out.flush()
        if args.slow_every and n % args.slow_every == 0:
            time.sleep(args.slow_ms / 1000)
        elif args.delay_ms:
            time.sleep(args.delay_ms / 1000)
        line = f"{event['id']}\t{event.get('knativekafkaoffset', '-')}"
        if args.print_data:
            line += f"\t{text_of(event.get_data())}\t{self.client_address[0]}"
        with lock:
            out.write(line + "\n")
            out.flush()
        self.send_response(202)
        self.send_header("content-length", "0")
        if args.close:
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()

    def log_message(self, *_):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    if args.backlog:
        request_queue_size = args.backlog


server = Server((args.host, args.port), Handler)
if tls is not None:
    server.socket = tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
print(f"listening {server.server_address[1]}", flush=True)
if args.stall_ms:
    time.sleep(args.stall_ms / 1000)
server.serve_forever()
