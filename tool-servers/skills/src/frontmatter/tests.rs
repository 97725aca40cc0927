#![allow(clippy::unwrap_used)]

use super::*;

fn errors(text: &str, folder: &str) -> Vec<Problem> {
    let problems = parse(text, folder).unwrap_err();
    assert!(
        problems.iter().any(|p| p.severity == Severity::Error),
        "{problems:?}"
    );
    problems
}

fn has(problems: &[Problem], line: usize, part: &str) -> bool {
    problems
        .iter()
        .any(|p| p.line == Some(line) && p.message.contains(part))
}

#[test]
fn a_published_style_skill_reads_every_field() {
    let text = "---\n\
        name: pdf-processing\n\
        description: Extract text and tables from PDF files. Use when the user mentions PDFs.\n\
        license: Proprietary. LICENSE.txt has complete terms\n\
        compatibility: Requires python3\n\
        allowed-tools: Bash(python3 scripts/*:*) Read, Grep\n\
        metadata:\n  author: example-org\n  version: 1.0\n\
        ---\n\n# PDF processing\n\nRun `scripts/extract.py`.\n";
    let parsed = parse(text, "pdf-processing").unwrap();
    let fm = &parsed.frontmatter;
    assert_eq!(fm.name, "pdf-processing");
    assert!(fm.description.starts_with("Extract text"));
    assert_eq!(
        fm.license.as_deref(),
        Some("Proprietary. LICENSE.txt has complete terms")
    );
    assert_eq!(fm.compatibility.as_deref(), Some("Requires python3"));
    assert_eq!(
        fm.allowed_tools,
        vec!["Bash(python3 scripts/*:*)", "Read", "Grep"]
    );
    // `1.0` stays as written, not the number 1.
    assert_eq!(fm.metadata["version"], "1.0");
    assert_eq!(fm.metadata["author"], "example-org");
    assert!(fm.model_invocable);
    assert_eq!(parsed.body, "# PDF processing\n\nRun `scripts/extract.py`.");
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
}

#[test]
fn errors_name_the_line_and_what_is_wrong() {
    let p = errors("# Just markdown\n", "x");
    assert!(has(&p, 1, "must start with a `---` line"), "{p:?}");
    let p = errors("---\nname: x\ndescription: y\n", "x");
    assert!(has(&p, 1, "never closed"), "{p:?}");
    let p = errors("---\nname: x\n---\nbody\n", "x");
    assert!(has(&p, 1, "`description` is missing"), "{p:?}");
    let p = errors("---\nname: x\ndescription: \"unclosed\n---\n", "x");
    assert!(p[0].message.starts_with("invalid YAML"), "{p:?}");
    assert!(p[0].line.unwrap() >= 3, "{p:?}");
    let p = errors("---\nname: x\ndescription: y\nname: z\n---\n", "x");
    assert!(has(&p, 4, "duplicated key"), "{p:?}");
    let p = errors("---\n- a list\n---\n", "x");
    assert!(has(&p, 2, "must be a mapping"), "{p:?}");
    let p = errors("---\n---\n", "x");
    assert!(p[0].message.contains("empty"), "{p:?}");
    let p = errors("---\nname: x\ndescription: [a, b]\n---\n", "x");
    assert!(has(&p, 3, "`description` must be text"), "{p:?}");
    let p = errors("---\nname: ''\ndescription: y\n---\n", "x");
    assert!(has(&p, 2, "`name` is empty"), "{p:?}");
}

#[test]
fn cosmetic_breaches_are_warnings_and_the_skill_loads() {
    let long = "d".repeat(1025);
    let text = format!(
        "---\nname: My_Skill\ndescription: {long}\nversion: 2\ndisable-model-invocation: true\n\
         argument-hint: '[file]'\n---\nBody\n"
    );
    let parsed = parse(&text, "my-skill").unwrap();
    let w = &parsed.warnings;
    assert!(has(w, 2, "lowercase letters, digits and hyphens"), "{w:?}");
    assert!(has(w, 2, "does not match its folder `my-skill`"), "{w:?}");
    assert!(has(w, 3, "1025 characters long"), "{w:?}");
    assert!(has(w, 4, "unknown field `version`"), "{w:?}");
    // Claude Code's own fields are known, not "unknown".
    assert!(
        !w.iter().any(|p| p.message.contains("argument-hint")),
        "{w:?}"
    );
    assert!(!parsed.frontmatter.model_invocable);
    assert!(name_rules("a--b", "a--b")[0].contains("two hyphens"));
    assert!(name_rules("-a", "-a")[0].contains("start or end"));
    assert!(
        name_rules("données", "données").is_empty(),
        "unicode lowercase is allowed"
    );
}

#[test]
fn an_unquoted_colon_is_read_as_text_with_a_warning() {
    let text =
        "---\nname: triage\ndescription: Use this skill when: the user asks about bugs\n---\nB\n";
    let parsed = parse(text, "triage").unwrap();
    assert_eq!(
        parsed.frontmatter.description,
        "Use this skill when: the user asks about bugs"
    );
    assert!(
        has(&parsed.warnings, 3, "put it in quotes"),
        "{:?}",
        parsed.warnings
    );
}

#[test]
fn crlf_files_bom_and_block_scalars_read_the_same() {
    let text = "\u{feff}---\r\nname: notes\r\ndescription: >\r\n  Folded over\r\n  two lines.\r\n---\r\nBody\r\n";
    let parsed = parse(text, "notes").unwrap();
    assert_eq!(parsed.frontmatter.description, "Folded over two lines.");
    assert_eq!(parsed.body, "Body");
}
