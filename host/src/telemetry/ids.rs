//! Trace and span ids derived from the run: the same run id and call id always give the same
//! ids, so the gateway can put a call's `traceparent` in the request's `_meta` before its span
//! exists — the span, built when the call finishes, gets exactly that id.

use opentelemetry::trace::{SpanId, TraceId};
use sha2::{Digest, Sha256};

fn digest(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    h.finalize().into()
}

/// A span id from `parts`; never the invalid all-zero id.
fn span_id(parts: &[&str]) -> SpanId {
    let d = digest(parts);
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    if b == [0; 8] {
        b[7] = 1;
    }
    SpanId::from_bytes(b)
}

/// The run's trace.
pub fn trace_id(run_id: &str) -> TraceId {
    let d = digest(&["tern.trace", run_id]);
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    if b == [0; 16] {
        b[15] = 1;
    }
    TraceId::from_bytes(b)
}

/// The run's `invoke_agent` span.
pub fn run_span(run_id: &str) -> SpanId {
    span_id(&["tern.run", run_id])
}

/// The `chat` span of the `n`th model request of `step` (a request is sent again after an
/// overflow).
pub fn chat_span(run_id: &str, step: u32, n: u32) -> SpanId {
    span_id(&["tern.chat", run_id, &step.to_string(), &n.to_string()])
}

/// The `execute_tool` span of a call.
pub fn tool_span(run_id: &str, call_id: &str) -> SpanId {
    span_id(&["tern.tool", run_id, call_id])
}

/// The W3C `traceparent` of a call's span (sampled).
pub fn traceparent(run_id: &str, call_id: &str) -> String {
    format!("00-{}-{}-01", trace_id(run_id), tool_span(run_id, call_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_distinct_and_well_formed() {
        assert_eq!(trace_id("r1"), trace_id("r1"));
        assert_ne!(trace_id("r1"), trace_id("r2"));
        assert_ne!(tool_span("r1", "c1"), tool_span("r1", "c2"));
        assert_ne!(chat_span("r1", 1, 0), chat_span("r1", 1, 1));
        assert_ne!(run_span("r1"), tool_span("r1", "run"));
        let tp = traceparent("r1", "c1");
        let parts: Vec<&str> = tp.split('-').collect();
        assert_eq!(parts.len(), 4);
        assert_eq!((parts[0], parts[3]), ("00", "01"));
        assert_eq!(parts[1].len(), 32);
        assert_eq!(parts[2].len(), 16);
        assert_eq!(parts[1], trace_id("r1").to_string());
        assert_eq!(parts[2], tool_span("r1", "c1").to_string());
    }
}
