//! What a typed line brings with it: project files (`@path`, their text after the line), server
//! resources (`@server:uri`) and images (`@pic.png`, or an image's path pasted or dragged into
//! the terminal). Everything is taken from what was typed, never from the text of an attached
//! file, and a line whose attachment cannot be read is given back to fix.

use std::io::Write;

use super::{files, mentions, pasted};
use crate::{
    agent::{Engine, attach::Attachment},
    workspace::Workspace,
};

/// A line with what it attached.
pub(super) struct Attached {
    /// The line, then each attached file's and resource's text.
    pub text: String,
    /// The images, in the order they were named.
    pub images: Vec<Attachment>,
}

/// `input` with every project file (`@path`), server resource (`@server:uri`) and image it
/// names read and attached; `None` (after saying why) when one cannot be read, or the model
/// cannot take the images.
pub(super) async fn attach(
    engine: &Engine,
    ws: &Workspace,
    input: &str,
    out: &mut dyn Write,
) -> std::io::Result<Option<Attached>> {
    let cwd = &ws.cwd;
    let mut text = input.to_string();
    let mut images: Vec<Attachment> = Vec::new();
    // A path pasted or dragged in: an image named by the person at their terminal.
    let home = ws.var("HOME").map(std::path::PathBuf::from);
    for p in pasted::image_paths(input, cwd, home.as_deref()) {
        match engine.attach_image(&p.path, cwd).await {
            Ok(mut a) => {
                a.name = p.path.display().to_string();
                images.push(a);
            }
            Err(e) => {
                writeln!(out, "cannot attach {}: {}", p.typed, render(&e.to_string()))?;
                return Ok(None);
            }
        }
    }
    if input.contains('@') {
        let servers: Vec<String> = engine.servers().into_iter().map(|s| s.name).collect();
        // `@path`: a project file, read through the gateway (an audited `fs__read_file`
        // call); an image file comes back as an image.
        let paths = files::mentioned(input, cwd, &servers);
        let mut texts = Vec::new();
        for path in &paths {
            match engine.read_mentioned_file(path).await {
                Ok(read) if !read.images.is_empty() => {
                    images.extend(
                        read.images
                            .into_iter()
                            .map(|i| Attachment::new(path.clone(), i)),
                    );
                }
                Ok(read) => {
                    text.push_str("\n\n");
                    text.push_str(&files::block(path, &read.text));
                    texts.push(format!("@{path}"));
                }
                Err(e) => {
                    writeln!(out, "cannot read @{path}: {}", render(&e))?;
                    return Ok(None);
                }
            }
        }
        if !texts.is_empty() {
            writeln!(out, "(attached {})", texts.join(", "))?;
        }
        let listed = engine.resources().await;
        // Mentions are taken from what was typed, never from the text of an attached file.
        let found = mentions::mentions(input, &servers, &listed);
        for m in &found {
            match engine.read_resource(&m.server, &m.uri).await {
                Ok(read) => {
                    text.push_str("\n\n");
                    text.push_str(&mentions::block(m, read.mime_type.as_deref(), &read.text));
                }
                Err(e) => {
                    writeln!(out, "cannot read @{}:{}: {e}", m.server, m.uri)?;
                    return Ok(None);
                }
            }
        }
        if !found.is_empty() {
            let names: Vec<String> = found
                .iter()
                .map(|m| format!("@{}:{}", m.server, m.uri))
                .collect();
            writeln!(out, "(attached {})", names.join(", "))?;
        }
    }
    if let Err(e) = engine.check_images(&images) {
        writeln!(out, "{}", render(&e))?;
        return Ok(None);
    }
    for a in &images {
        writeln!(out, "{}", a.label())?;
    }
    Ok(Some(Attached { text, images }))
}

/// A message from a tool or a file system, made safe for the terminal (no escape sequences).
fn render(message: &str) -> String {
    crate::render::sanitize(message)
}
