//! Images in the transcript on their way out: left out for a model known to take none (a
//! session continued on a text-only model) or over its per-image limit (a tool that returned a
//! large screenshot), and kept out of the `model_request` event, whose readers (replay, trace,
//! ATIF) need the shape, not megabytes of base64 on every step; and kept whole in the session
//! file, past the redactor.

use serde_json::Value;
use tern_gateway::Redactor;
use tern_model::{
    Message, UserContent,
    vision::{ImageSupport, Takes},
};
use tern_protocol::{Image, image};

use crate::units::format_bytes;

/// `messages` with every image the model cannot take replaced by a one-line note: all of them
/// for a model known to take none (a session continued on a text-only model), and any over its
/// per-image limit (a tool that returned a large screenshot). Sent as it is, such an image would
/// make the provider refuse this request and every later one of the session.
pub fn fit_images(messages: Vec<Message>, support: &ImageSupport) -> Vec<Message> {
    let text_only = matches!(support.takes, Takes::No { .. });
    let over = |i: &Image| image::decoded_len(&i.data) > support.max_image_bytes;
    let keep = |i: &Image| !text_only && !over(i);
    let any_left_out = messages.iter().any(|m| match m {
        Message::User { content } => content.iter().any(|c| match c {
            UserContent::Image(i) => !keep(i),
            UserContent::ToolResult(r) => r.images.iter().any(|i| !keep(i)),
            UserContent::Text { .. } => false,
        }),
        Message::Assistant { .. } => false,
    });
    if !any_left_out {
        return messages;
    }
    let why = |i: &Image| {
        if text_only {
            "this model takes no images".to_string()
        } else {
            format!(
                "{}, over the model's limit of {}",
                format_bytes(image::decoded_len(&i.data)),
                format_bytes(support.max_image_bytes)
            )
        }
    };
    messages
        .into_iter()
        .map(|m| match m {
            Message::User { content } => Message::User {
                content: content
                    .into_iter()
                    .map(|c| match c {
                        UserContent::Image(i) if !keep(&i) => UserContent::Text {
                            text: format!(
                                "[an image was attached here ({}); left out: {}]",
                                crate::agent::attach::describe(&i),
                                why(&i)
                            ),
                        },
                        UserContent::ToolResult(mut r) if r.images.iter().any(|i| !keep(i)) => {
                            let (kept, left): (Vec<Image>, Vec<Image>) =
                                r.images.into_iter().partition(|i| keep(i));
                            for i in &left {
                                r.content.push_str(&format!(
                                    "\n[an image ({}) left out: {}]",
                                    i.mime_type,
                                    why(i)
                                ));
                            }
                            r.images = kept;
                            UserContent::ToolResult(r)
                        }
                        other => other,
                    })
                    .collect(),
            },
            other => other,
        })
        .collect()
}

/// Replaces the `data` of every image in a serialised neutral request with a note of its size.
pub fn elide_image_data(request: &mut Value) {
    let Some(messages) = request.get_mut("messages").and_then(Value::as_array_mut) else {
        return;
    };
    let elide = |image: &mut Value| {
        if let Some(data) = image.get_mut("data")
            && let Some(text) = data.as_str()
        {
            *data = Value::String(format!("<{} base64 characters>", text.len()));
        }
    };
    for message in messages {
        let Some(content) = message.get_mut("content").and_then(Value::as_array_mut) else {
            continue;
        };
        for block in content {
            match block["type"].as_str() {
                Some("image") => elide(block),
                Some("tool_result") => {
                    if let Some(images) = block.get_mut("images").and_then(Value::as_array_mut) {
                        images.iter_mut().for_each(elide);
                    }
                }
                _ => {}
            }
        }
    }
}

/// A session line (JSON) redacted everywhere but inside image data. The redactor's key shapes
/// can match inside base64 by chance (`/` or `+`, then `AIza` and 30 more letters: about once
/// in 1.4 billion characters, so one 5 MB screenshot in a few hundred), and a changed byte makes
/// the image one the provider refuses on every later turn of the session.
pub fn redact_keeping_images(redactor: &Redactor, line: &str) -> String {
    if !line.contains("\"mime_type\":\"image/") {
        return redactor.redact(line);
    }
    let Ok(mut value) = serde_json::from_str::<Value>(line) else {
        return redactor.redact(line);
    };
    redact_value(redactor, &mut value);
    serde_json::to_string(&value).unwrap_or_else(|_| redactor.redact(line))
}

/// Every string in `value` redacted, except the `data` of an object whose `mime_type` is an
/// image's (a user's attached image, an image in a tool result).
fn redact_value(redactor: &Redactor, value: &mut Value) {
    match value {
        Value::String(s) => *s = redactor.redact(s),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(redactor, v)),
        Value::Object(map) => {
            let image = map
                .get("mime_type")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with("image/"));
            for (key, v) in map.iter_mut() {
                if !(image && key == "data") {
                    redact_value(redactor, v);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use tern_protocol::ToolResult;

    use super::*;

    #[test]
    fn session_lines_keep_image_data_whole_and_redact_the_rest() {
        let redactor = Redactor::new([]);
        // Base64 that happens to hold a Google-key shape, and the same shape in the text.
        let data = format!("iVBORw0K{}/AIzaSyA{}+xyz==", "Q".repeat(10), "b".repeat(33));
        let key = format!("AIzaSyA{}", "b".repeat(33));
        assert_ne!(
            redactor.redact(&data),
            data,
            "the shape alone would be redacted"
        );
        let line = serde_json::to_string(&Message::User {
            content: vec![
                UserContent::Image(Image {
                    mime_type: "image/png".into(),
                    data: data.clone(),
                }),
                UserContent::Text {
                    text: format!("my key is {key}"),
                },
                UserContent::ToolResult(ToolResult {
                    images: vec![Image {
                        mime_type: "image/png".into(),
                        data: data.clone(),
                    }],
                    ..ToolResult::text("c1", format!("found {key}"))
                }),
            ],
        })
        .unwrap();
        let saved = redact_keeping_images(&redactor, &line);
        let back: Message = serde_json::from_str(&saved).unwrap();
        let Message::User { content } = back else {
            panic!()
        };
        assert!(matches!(&content[0], UserContent::Image(i) if i.data == data));
        assert!(matches!(&content[1], UserContent::Text { text } if !text.contains(&key)));
        let UserContent::ToolResult(r) = &content[2] else {
            panic!()
        };
        assert_eq!(r.images[0].data, data);
        assert!(!r.content.contains(&key), "{}", r.content);
        // A line without images is redacted as before, byte for byte.
        let plain = format!("{{\"text\":\"{key}\"}}");
        assert_eq!(
            redact_keeping_images(&redactor, &plain),
            redactor.redact(&plain)
        );
    }
    fn png() -> Image {
        Image {
            mime_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }
    }

    #[test]
    fn text_only_models_get_notes_and_events_get_sizes() {
        let messages = vec![Message::User {
            content: vec![
                UserContent::Image(png()),
                UserContent::Text {
                    text: "what is this?".into(),
                },
                UserContent::ToolResult(ToolResult {
                    images: vec![png()],
                    ..ToolResult::text("c1", "shot")
                }),
            ],
        }];
        let mut json = serde_json::json!({ "messages": messages.clone() });
        elide_image_data(&mut json);
        let text = json.to_string();
        assert!(!text.contains("iVBORw0KGgo"), "{text}");
        assert_eq!(text.matches("<12 base64 characters>").count(), 2, "{text}");
        assert_eq!(json["messages"][0]["content"][0]["mime_type"], "image/png");

        let text_only = ImageSupport {
            takes: Takes::No { why: "test".into() },
            max_image_bytes: 1_000,
            limit_source: "test",
        };
        let Message::User { content } = &fit_images(messages.clone(), &text_only)[0] else {
            panic!()
        };
        let UserContent::Text { text } = &content[0] else {
            panic!("{content:?}")
        };
        assert!(
            text.contains("image/png") && text.contains("takes no images"),
            "{text}"
        );
        let UserContent::ToolResult(r) = &content[2] else {
            panic!()
        };
        assert!(r.images.is_empty());
        assert!(
            r.content.ends_with("left out: this model takes no images]"),
            "{}",
            r.content
        );

        // A model that takes images: only those over its limit are left out.
        let fits = ImageSupport {
            takes: Takes::Yes,
            max_image_bytes: 8,
            limit_source: "test",
        };
        assert_eq!(fit_images(messages.clone(), &fits), messages, "8 bytes fit");
        let big = Image {
            data: "A".repeat(16), // 12 bytes
            ..png()
        };
        let mixed = vec![Message::User {
            content: vec![UserContent::ToolResult(ToolResult {
                images: vec![png(), big],
                ..ToolResult::text("c1", "two shots")
            })],
        }];
        let Message::User { content } = &fit_images(mixed, &fits)[0] else {
            panic!()
        };
        let UserContent::ToolResult(r) = &content[0] else {
            panic!()
        };
        assert_eq!(r.images, vec![png()], "the small one stays");
        assert!(
            r.content
                .ends_with("[an image (image/png) left out: 12 B, over the model's limit of 8 B]"),
            "{}",
            r.content
        );
    }
}
