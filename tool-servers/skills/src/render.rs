//! What the model and people read: the skill listing (name and description only), a loaded
//! skill, the `list` report.
//!
//! The listing and the loaded skill use the tags the Agent Skills client guide suggests
//! (`<available_skills>`, `<skill_content>`, `<skill_resources>`), so a host can recognise
//! skill content in a conversation (e.g. to keep it through a compaction).

use std::fmt::Write as _;

use crate::discover::{Catalog, Scope, Skill};
use crate::files::Listing;

/// `&`, `<` and `>` escaped, so a description cannot close the tags around it.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The skills the model may start, as `<available_skills>`: name and description, no body.
pub fn available(catalog: &Catalog) -> String {
    let mut out = String::from("<available_skills>\n");
    for skill in catalog.offered() {
        let _ = write!(
            out,
            "<skill>\n<name>{}</name>\n<description>{}</description>\n</skill>\n",
            escape(&skill.frontmatter.name),
            escape(&skill.frontmatter.description)
        );
    }
    out.push_str("</available_skills>");
    out
}

/// The server's instructions: how skills work here, then the listing. `None` without a skill
/// to offer, so a host adds nothing to its prompt (the client guide: no empty catalog).
pub fn instructions(catalog: &Catalog) -> Option<String> {
    catalog.offered().next()?;
    Some(format!(
        "Agent Skills are folders of instructions, scripts and resources for specific tasks. When \
         a task matches a skill's description, call this server's `load` tool with the skill's \
         name before you go on: it returns the skill's instructions, its folder and its files.\n\n{}",
        available(catalog)
    ))
}

/// The description of `load`, with the listing when it belongs there.
pub fn load_description(catalog: &Catalog, with_listing: bool) -> String {
    let head = "Load an Agent Skill by name: its instructions (the body of its SKILL.md), the \
                absolute path of its folder and the list of its files. Call it as soon as a task \
                matches a skill's description, before doing the task; read the skill's files \
                with `read_file` and run its scripts with your shell tool.";
    if with_listing {
        format!("{head}\n\n{}", available(catalog))
    } else {
        format!("{head} The skills are listed in this server's instructions.")
    }
}

/// A loaded skill, wrapped in `<skill_content>`: the body, where its folder is and how to use
/// it, and its files (listed, never read).
pub fn loaded(skill: &Skill, body: &str, files: &Listing) -> String {
    let name = &skill.frontmatter.name;
    let dir = skill.dir.display();
    let mut out = format!("<skill_content name=\"{}\">\n{body}\n\n", escape(name));
    let _ = writeln!(out, "Skill directory: {dir}");
    let example = files
        .files
        .iter()
        .find(|f| f.starts_with("scripts/"))
        .map(|f| format!(" (e.g. `{dir}/{f}`)"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "Relative paths in this skill are relative to that directory. Read its files with this \
         server's `read_file` tool (skill `{name}`); run its scripts with your shell tool by \
         their absolute path{example}."
    );
    if let Some(compat) = &skill.frontmatter.compatibility {
        let _ = writeln!(out, "Compatibility: {compat}");
    }
    if !skill.frontmatter.allowed_tools.is_empty() {
        let _ = writeln!(
            out,
            "Tools the skill expects to use: {}",
            skill.frontmatter.allowed_tools.join(" ")
        );
    }
    if files.files.is_empty() {
        out.push_str("The skill has no other files.\n");
    } else {
        out.push_str("<skill_resources>\n");
        for f in &files.files {
            let _ = writeln!(out, "<file>{}</file>", escape(f));
        }
        if files.truncated {
            out.push_str("<!-- more files exist; this list is incomplete -->\n");
        }
        out.push_str("</skill_resources>\n");
    }
    out.push_str("</skill_content>");
    out
}

fn scope(s: Scope) -> &'static str {
    match s {
        Scope::Project => "project",
        Scope::User => "user",
    }
}

/// The `list` report (and `--check`'s): every skill with its source, every problem with its
/// file and line, every folder searched.
pub fn report(catalog: &Catalog) -> String {
    let mut out = match catalog.skills.len() {
        0 => "No skills found.\n".to_string(),
        1 => "1 skill:\n".to_string(),
        n => format!("{n} skills:\n"),
    };
    for skill in &catalog.skills {
        let fm = &skill.frontmatter;
        let only_user = if fm.model_invocable {
            ""
        } else {
            " [only the user may start it]"
        };
        let _ = writeln!(
            out,
            "- {} ({}, {}){only_user}: {}",
            fm.name,
            scope(skill.source.scope),
            skill.dir.display(),
            fm.description
        );
    }
    if !catalog.notices.is_empty() {
        out.push_str("Problems:\n");
        for notice in &catalog.notices {
            let _ = writeln!(out, "- {notice}");
        }
    }
    let searched: Vec<String> = catalog
        .searched
        .iter()
        .map(|s| {
            let missing = if s.exists { "" } else { ", missing" };
            format!("{} ({}{missing})", s.dir.display(), scope(s.scope))
        })
        .collect();
    if searched.is_empty() {
        out.push_str("No skills folders were given.");
    } else {
        let _ = write!(out, "Searched: {}", searched.join(", "));
    }
    out
}
