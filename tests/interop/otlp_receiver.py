"""A minimal OTLP/HTTP receiver for tests: decodes what it receives with the official
OpenTelemetry protobuf definitions (`opentelemetry-proto`) and writes one JSON line per request.

    otlp_receiver.py OUT_FILE

Prints the port it listens on (127.0.0.1) as its first stdout line. Accepts
`application/x-protobuf` and `application/json` bodies on /v1/traces and /v1/metrics; anything
that does not decode is answered 400 and recorded as an error line, so a test sees it.
"""

import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = open(sys.argv[1], "a", encoding="utf-8")
KINDS = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
}


ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def hex_ids_to_base64(value):
    """OTLP/JSON spells trace and span ids in hex where proto3 JSON expects base64."""
    if isinstance(value, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode()
            if k in ID_KEYS and isinstance(v, str)
            else hex_ids_to_base64(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [hex_ids_to_base64(v) for v in value]
    return value


def record(entry):
    OUT.write(json.dumps(entry) + "\n")
    OUT.flush()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        kind = KINDS.get(self.path)
        ctype = self.headers.get("content-type", "")
        if kind is None:
            record({"error": f"unknown path {self.path}"})
            self.send_response(404)
            self.end_headers()
            return
        request_type, response_type = kind
        message = request_type()
        try:
            if ctype.startswith("application/json"):
                json_format.ParseDict(hex_ids_to_base64(json.loads(body)), message)
            else:
                message.ParseFromString(body)
        except Exception as e:  # noqa: BLE001 - any decode failure is the test's business
            record({"error": f"cannot decode {self.path} ({ctype}): {e}"})
            self.send_response(400)
            self.end_headers()
            return
        decoded = json_format.MessageToDict(message, preserving_proto_field_name=True)
        if self.path == "/v1/traces":
            # Ids as lowercase hex (MessageToDict gives base64), as a traceparent spells them.
            for rs, drs in zip(message.resource_spans, decoded.get("resource_spans", [])):
                for ss, dss in zip(rs.scope_spans, drs.get("scope_spans", [])):
                    for span, dspan in zip(ss.spans, dss.get("spans", [])):
                        dspan["trace_id"] = span.trace_id.hex()
                        dspan["span_id"] = span.span_id.hex()
                        dspan["parent_span_id"] = span.parent_span_id.hex()
        record({"path": self.path, "content_type": ctype, "body": decoded})
        reply = response_type().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
