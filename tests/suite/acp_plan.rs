//! Plan mode set by the editor over ACP (issue 21), with the official TypeScript SDK as the
//! editor: writes refused at the gateway, the plan sent as a message and a permission question;
//! kept planning, approved and carried out in the same prompt, or the question cancelled.

use serde_json::{Value, json};
use tern_e2e::run_env::{RunEnv, of_type};
use tern_model::mock::script::AnthropicTurn;

use super::acp::{asked, audit, call, editor, rule_of, text_of, turn, updates};
use super::acp_session::{result_text, tool_names};

const PLAN: &str = "# Plan\n\n1. Change `a.txt` to say *changed*.\n2. Check it with `cat a.txt`.";

#[tokio::test]
async fn plan_mode_from_the_editor_refuses_writes_sends_the_plan_and_stays_until_changed() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    std::fs::write(dir.join("a.txt"), "original\n").unwrap();
    let write = json!({"path": "a.txt", "content": "changed\n"}).to_string();
    // Prompt 1, in plan mode: a forced write (refused), then the plan. Nothing after
    // `plan__exit`: a turn that went on would ask the mock for a response it does not have.
    env.server.enqueue(turn(("w1", "fs__write_file", &write)));
    let exit = json!({ "plan": PLAN }).to_string();
    env.server.enqueue(turn(("p1", "plan__exit", &exit)));
    // The editor is asked to approve the plan and answers "No, keep planning".
    // Prompt 2, no mode change: still plan mode, an edit is refused too.
    let edit = r#"{"path":"a.txt","old_string":"original","new_string":"changed"}"#;
    env.server.enqueue(turn(("w2", "fs__edit_file", edit)));
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Still planning."])
            .finish("end_turn"),
    );
    // Prompt 3, after the editor switched to `default` (its way of approving the plan): the
    // write is asked, allowed once, and runs.
    env.server.enqueue(turn(("w3", "fs__write_file", &write)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Done."]).finish("end_turn"));

    let report = editor(
        &env,
        json!({
            "answers": ["plan", "allow_once"],
            "prompts": [
                {"text": "plan the change", "mode": "plan"},
                {"text": "and now?"},
                {"text": "go ahead", "mode": "default"},
            ],
        }),
    )
    .await;
    for (i, p) in report["prompts"].as_array().unwrap().iter().enumerate() {
        assert_eq!(p["stopReason"], "end_turn", "prompt {i}: {report:#}");
    }
    let modes: Vec<&Value> = updates(&report, "current_mode_update")
        .iter()
        .map(|u| &u["currentModeId"])
        .collect();
    assert_eq!(modes, [&json!("plan"), &json!("default")], "{report:#}");

    // The writes in plan mode: refused at the gateway, never asked, the editor told why.
    for id in ["w1", "w2"] {
        let (started, end) = call(&report, id);
        assert_eq!(started["kind"], "edit", "{started}");
        assert_eq!(end["status"], "failed", "{end}");
        let why = result_text(&report, id);
        assert!(why.contains("plan mode"), "{id}: {why}");
        assert!(why.contains("plan__exit"), "{id}: {why}");
    }
    let asked = asked(&report);
    assert_eq!(
        asked,
        ["p1", "w3"],
        "the plan, then only the default-mode write is asked"
    );
    // The plan's question: Claude Code's ACP adapter's three options, with tern's mode ids.
    assert_eq!(
        report["permissions"][0]["options"],
        json!([
            "accept-edits:allow_always",
            "default:allow_once",
            "plan:reject_once"
        ])
    );
    let audit = audit(env.home.path());
    assert_eq!(rule_of(&audit, "w1"), "mode:plan");
    assert_eq!(rule_of(&audit, "w2"), "mode:plan");
    assert_eq!(rule_of(&audit, "w3"), "acp:once");

    // The plan: a successful `plan__exit`, then one agent message carrying it, text and
    // `_meta["tern/plan"]`.
    assert_eq!(call(&report, "p1").1["status"], "completed");
    let plans: Vec<&Value> = updates(&report, "agent_message_chunk")
        .into_iter()
        .filter(|u| u["_meta"][tern_protocol::meta::ACP_PLAN].is_string())
        .collect();
    assert_eq!(plans.len(), 1, "{report:#}");
    assert_eq!(plans[0]["_meta"]["tern/plan"], PLAN);
    assert!(
        plans[0]["content"]["text"].as_str().unwrap().contains(PLAN),
        "{}",
        plans[0]
    );
    // No ACP `plan` (todo list) update was made of it: the editor's plan view is the todo list.
    assert!(updates(&report, "plan").is_empty(), "{report:#}");
    let events = env.events();
    let proposed = of_type(&events, "plan_proposed");
    assert_eq!(proposed.len(), 1);
    assert_eq!(proposed[0]["plan"], PLAN);

    // What the model was offered: plan mode's tools (and prompt) for the first two prompts —
    // the turn after the plan too, since the editor said to keep planning — then the rest.
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 6, "the first turn ended on plan__exit");
    for (i, r) in requests.iter().enumerate() {
        let offered = tool_names(r);
        let system = r.json()["system"].to_string();
        let planning = i < 4;
        assert_eq!(
            offered.iter().any(|t| t == "plan__exit"),
            planning,
            "request {i}: {offered:?}"
        );
        assert_eq!(
            offered.iter().any(|t| t == "fs__write_file"),
            !planning,
            "request {i}: {offered:?}"
        );
        assert_eq!(
            system.contains("The session is in plan mode"),
            planning,
            "request {i}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "changed\n"
    );

    // `usage_update` after each turn: the context the last response used (the mock's 10 input
    // and 42 output tokens) out of the model's window, and the turn's cost, as the engine
    // counted them (the events file's `turn_finished`).
    let usage = updates(&report, "usage_update");
    let finished = of_type(&events, "turn_finished");
    assert_eq!(usage.len(), 3, "{report:#}");
    assert_eq!(finished.len(), 3);
    for (u, f) in usage.iter().zip(&finished) {
        assert_eq!(u["used"], 52, "{u}");
        assert_eq!(f["context_tokens"], 52, "{f}");
        let window = f["context_window"].as_u64().expect("a known window");
        assert!(window >= 100_000, "{f}");
        assert_eq!(u["size"], window, "{u}");
        let cost = f["cost_usd"].as_f64().expect("a priced model");
        assert!(cost > 0.0, "{f}");
        assert_eq!(u["cost"]["amount"].as_f64(), Some(cost), "{u}");
        assert_eq!(u["cost"]["currency"], "USD", "{u}");
    }
}

#[tokio::test]
async fn an_approved_plan_switches_the_mode_and_is_carried_out_in_the_same_prompt() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    std::fs::write(dir.join("a.txt"), "original\n").unwrap();
    let exit = json!({ "plan": PLAN }).to_string();
    env.server.enqueue(turn(("p1", "plan__exit", &exit)));
    // Approved with "auto-accept edits": the next turn starts at once and its write is not asked.
    let write = json!({"path": "a.txt", "content": "changed\n"}).to_string();
    env.server.enqueue(turn(("w1", "fs__write_file", &write)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Done."]).finish("end_turn"));
    let report = editor(
        &env,
        json!({
            "answers": ["accept-edits"],
            "prompts": [{"text": "plan, then do it", "mode": "plan"}],
        }),
    )
    .await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    let asked = asked(&report);
    assert_eq!(asked, ["p1"], "only the plan is asked: {report:#}");
    let modes: Vec<&Value> = updates(&report, "current_mode_update")
        .iter()
        .map(|u| &u["currentModeId"])
        .collect();
    assert_eq!(
        modes,
        [&json!("plan"), &json!("accept-edits")],
        "{report:#}"
    );
    assert_eq!(call(&report, "w1").1["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "changed\n"
    );
    assert!(text_of(&report, "agent_message_chunk").contains("Done."));

    // The model: planning, then — same prompt — the approved plan with the REPL's instruction,
    // the write tools offered again and plan__exit not.
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 3);
    assert!(tool_names(&requests[0]).iter().any(|t| t == "plan__exit"));
    let approved = &requests[1];
    let last_user = approved.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .unwrap()
        .to_string();
    assert!(
        last_user.contains("The user approved your plan") && last_user.contains("accept-edits"),
        "{last_user}"
    );
    assert!(last_user.contains("Check it with"), "{last_user}");
    let offered = tool_names(approved);
    assert!(offered.iter().any(|t| t == "fs__write_file"), "{offered:?}");
    assert!(!offered.iter().any(|t| t == "plan__exit"), "{offered:?}");
    assert!(
        !approved.json()["system"]
            .to_string()
            .contains("The session is in plan mode")
    );
    // Saved beside the session's transcript, as the REPL saves an approved plan.
    let session_id = report["session"]["sessionId"].as_str().unwrap();
    let saved = std::fs::read_to_string(
        env.home
            .path()
            .join("sessions")
            .join(format!("{session_id}.plan.md")),
    )
    .unwrap_or_else(|e| panic!("{e}: {:?}", tern_e2e::run_env::all_files(env.home.path())));
    assert_eq!(saved, PLAN);
    let audit = audit(env.home.path());
    assert!(rule_of(&audit, "w1").starts_with("mode:"), "{audit:#?}");
}

#[tokio::test]
async fn cancelling_instead_of_answering_the_plan_question_keeps_plan_mode() {
    let env = RunEnv::new().await;
    let exit = json!({ "plan": PLAN }).to_string();
    env.server.enqueue(turn(("p1", "plan__exit", &exit)));
    let report = editor(
        &env,
        json!({
            "cancelOnPermission": "p1",
            "prompts": [{"text": "plan it", "mode": "plan"}],
        }),
    )
    .await;
    assert_eq!(
        report["prompts"][0]["stopReason"], "cancelled",
        "{report:#}"
    );
    assert_eq!(report["permissions"][0]["toolCallId"], "p1");
    let modes: Vec<&Value> = updates(&report, "current_mode_update")
        .iter()
        .map(|u| &u["currentModeId"])
        .collect();
    assert_eq!(
        modes,
        [&json!("plan")],
        "the mode never left plan: {report:#}"
    );
    // Nothing ran after the plan and nothing was saved.
    assert_eq!(env.server.model_requests().len(), 1);
    let session_id = report["session"]["sessionId"].as_str().unwrap();
    let saved = env
        .home
        .path()
        .join("sessions")
        .join(format!("{session_id}.plan.md"));
    assert!(!saved.exists(), "{}", saved.display());
}
