//! `${VAR}` expansion in args, env, url and headers, through the injected environment.

use std::collections::BTreeMap;

use tern_config::{ConfigError, Transport};

use super::Fixture;

const SERVERS: &str = r#"[mcp_servers.local]
command = "srv"
args = ["${HOME}/data", "--price=$$5", "--name=${NAME:-anon}"]
env = { TOKEN = "${TOKEN}", MODE = "${MODE:-fast}" }

[mcp_servers.remote]
url = "https://${HOST:-mcp.example.com}/mcp"
http_headers = { "X-Token" = "${TOKEN}" }
"#;

#[test]
fn variables_and_defaults_expand_and_dollars_escape() {
    let mut fx = Fixture::new();
    fx.env.insert("HOME".into(), "/home/u".into());
    fx.env.insert("TOKEN".into(), "t0k".into());
    fx.env.insert("NAME".into(), "bob".into());
    fx.user_config(SERVERS);
    let config = fx.load(&Default::default()).unwrap();
    let Transport::Stdio { args, env, .. } = &config.mcp_servers["local"].transport else {
        panic!()
    };
    assert_eq!(args, &["/home/u/data", "--price=$5", "--name=bob"]);
    assert_eq!(
        env,
        &BTreeMap::from([
            ("MODE".into(), "fast".into()),
            ("TOKEN".into(), "t0k".into())
        ])
    );
    let Transport::Http { url, headers, .. } = &config.mcp_servers["remote"].transport else {
        panic!()
    };
    assert_eq!(url, "https://mcp.example.com/mcp");
    assert_eq!(headers["X-Token"], "t0k");
}

#[test]
fn an_undefined_variable_names_server_key_and_variable() {
    let mut fx = Fixture::new();
    fx.env.insert("HOME".into(), "/home/u".into());
    let file = fx.user_config(SERVERS);
    let err = fx.load(&Default::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:14: mcp_servers.local.env.TOKEN: ${{TOKEN}} is not set (write ${{TOKEN:-default}} to give a default)",
            file.display()
        )
    );
    let ConfigError::Expand {
        server, key, error, ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!((server.as_str(), key.as_str()), ("local", "env.TOKEN"));
    assert_eq!(error.variable(), Some("TOKEN"));

    // In a url.
    let mut fx = Fixture::new();
    fx.user_config("[mcp_servers.r]\nurl = \"https://${NOPE}/x\"\n");
    let err = fx.load(&Default::default()).unwrap_err().to_string();
    assert!(
        err.contains("mcp_servers.r.url: ${NOPE} is not set"),
        "{err}"
    );
    fx.env.insert("NOPE".into(), "h".into());
    assert!(fx.load(&Default::default()).is_ok());
}

#[test]
fn a_disabled_server_with_an_undefined_variable_does_not_fail_the_load() {
    let fx = Fixture::new();
    fx.user_config(
        "[mcp_servers.off]\ncommand = \"x\"\nargs = [\"${MISSING}\"]\nenabled = false\n",
    );
    let config = fx.load(&Default::default()).unwrap();
    let Transport::Stdio { args, .. } = &config.mcp_servers["off"].transport else {
        panic!()
    };
    assert_eq!(args, &["${MISSING}"], "left unexpanded");
    // Enabling it makes the missing variable an error.
    let options = tern_config::LoadOptions {
        overrides: vec!["mcp_servers.off.enabled=true".into()],
        ..Default::default()
    };
    assert!(matches!(fx.load(&options), Err(ConfigError::Expand { .. })));
}
