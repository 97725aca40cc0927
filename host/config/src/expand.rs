//! `${VAR}` and `${VAR:-default}` in server `env` values, `args`, `url` and headers.
//!
//! Same syntax as Claude Code's `.mcp.json`, so imported entries keep working. The environment is
//! injected (a lookup function) so tests never touch the process environment. `$$` is a literal `$`;
//! a `$` not followed by `{` or `$` is kept as is, so `$HOME`-style text passes through unchanged.

/// Looks up an environment variable; inject `&|name| std::env::var(name).ok()` in production.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Why a string could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// `${VAR}` with `VAR` unset and no default.
    #[error("${{{0}}} is not set (write ${{{0}:-default}} to give a default)")]
    Undefined(String),
    /// `${` without a closing `}`.
    #[error("unterminated ${{…}}")]
    Unterminated,
    /// `${}` or a name with characters other than letters, digits and `_`.
    #[error("bad variable name {0:?}")]
    BadName(String),
}

impl ExpandError {
    /// The variable at fault, if there is one.
    pub fn variable(&self) -> Option<&str> {
        match self {
            Self::Undefined(name) | Self::BadName(name) => Some(name),
            Self::Unterminated => None,
        }
    }
}

/// Expands `${VAR}`, `${VAR:-default}` (default used when `VAR` is unset or empty) and `$$`.
pub fn expand(text: &str, env: EnvLookup<'_>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body.find('}').ok_or(ExpandError::Unterminated)?;
            out.push_str(&substitute(&body[..end], env)?);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn substitute(inner: &str, env: EnvLookup<'_>) -> Result<String, ExpandError> {
    let (name, default) = match inner.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (inner, None),
    };
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(ExpandError::BadName(name.to_owned()));
    }
    match (env(name), default) {
        (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_owned()),
        (None, None) => Err(ExpandError::Undefined(name.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_variables_defaults_and_escapes() {
        let cases = [
            ("${HOME}/x", "/home/u/x"),
            ("a${MISSING:-dflt}b", "adfltb"),
            ("${EMPTY:-fallback}", "fallback"),
            ("${EMPTY}", ""),
            ("${HOME:-unused}", "/home/u"),
            ("cost: $$5", "cost: $5"),
            ("$${HOME}", "${HOME}"),
            ("$HOME stays", "$HOME stays"),
            ("trailing $", "trailing $"),
            ("${MISSING:-}", ""),
        ];
        for (input, want) in cases {
            assert_eq!(expand(input, &env).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn reports_what_is_wrong() {
        assert_eq!(
            expand("x ${TOKEN} y", &env),
            Err(ExpandError::Undefined("TOKEN".into()))
        );
        assert_eq!(expand("${HOME", &env), Err(ExpandError::Unterminated));
        assert_eq!(
            expand("${}", &env),
            Err(ExpandError::BadName(String::new()))
        );
        assert_eq!(
            expand("${A-B}", &env),
            Err(ExpandError::BadName("A-B".into()))
        );
        let message = ExpandError::Undefined("TOKEN".into()).to_string();
        assert_eq!(
            message,
            "${TOKEN} is not set (write ${TOKEN:-default} to give a default)"
        );
    }
}
