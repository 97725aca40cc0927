//! The window: compaction of a long session, refused requests, answers cut by max_tokens.

use super::*;

/// Tokens of a request as the scripted "provider" counts them.
fn size(req: &ModelRequest) -> u64 {
    tern_model::tokens::Tokenizer::Estimate.request(req)
}

#[tokio::test]
async fn a_long_session_is_compacted_and_never_outgrows_its_window() {
    // Each step reads ~1 400 tokens of output; the window holds about four of them.
    let mut turns: Vec<Vec<ModelEvent>> = (0..30)
        .map(|i| calls(&[(&format!("r{i}"), "read_big")]))
        .collect();
    turns.push(answer("all read"));
    let model = ScriptedModel::new(turns);
    let tools = Arc::new(FakeTools::default());
    let (mut agent, events) = agent(model.clone(), tools);
    agent.settings.max_steps = 40;
    let mut conv = windowed(Some(6_000));
    let out = agent
        .run_turn(&mut conv, "read everything", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Success, "{:?}", out.error);
    assert_eq!(out.answer.as_deref(), Some("all read"));
    let requests = model.requests.lock().unwrap();
    assert_eq!(
        requests.len(),
        31,
        "every scripted turn served exactly once"
    );
    for (i, r) in requests.iter().enumerate() {
        assert!(size(r) + 100 <= 6_000, "request {i} is {} tokens", size(r));
        // The goal is in every request, and the history is valid for the providers.
        assert!(
            format!("{:?}", r.messages).contains("read everything"),
            "request {i}"
        );
        assert_eq!(
            tern_model::normalize::normalize(&r.messages),
            r.messages,
            "request {i}"
        );
    }
    let compactions = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::Compaction { .. }))
        .count();
    assert!(compactions >= 3, "{compactions}");
    assert!(conv.compacted, "the engine is told to save a snapshot");
}

#[tokio::test]
async fn a_refused_request_is_compacted_and_sent_again_once() {
    let too_long = ModelError::Api {
        provider: "anthropic",
        kind: tern_model::ErrorKind::ContextOverflow,
        status: Some(400),
        error_type: Some("invalid_request_error".into()),
        message: "prompt is too long: 9000 tokens > 5000 maximum".into(),
        request_id: None,
        retry_after: None,
        should_retry: None,
        overflow: None,
    };
    let model = ScriptedModel::script(vec![
        Step::Turn(calls(&[("a", "read_big")])),
        Step::Turn(calls(&[("b", "read_big")])),
        Step::Turn(calls(&[("c", "read_big")])),
        Step::Fail(too_long),
        Step::Turn(answer("done")),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (agent, events) = agent(model.clone(), tools.clone());
    // No window known: only the refusal tells.
    let mut conv = windowed(None);
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Success, "{:?}", out.error);
    assert_eq!(out.answer.as_deref(), Some("done"));
    assert_eq!(out.steps, 4, "the retry is the same step");
    assert_eq!(
        tools.log.lock().unwrap().len(),
        6,
        "each call ran exactly once"
    );
    let requests = model.requests.lock().unwrap();
    let (refused, retried) = (&requests[3], &requests[4]);
    assert!(
        size(retried) < size(refused) / 2,
        "{} vs {}",
        size(retried),
        size(refused)
    );
    assert!(size(retried) <= 5_000);
    assert_eq!(
        conv.budget.limits().window,
        Some(5_000),
        "the limit was learned"
    );
    let reasons: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::Compaction { reason, .. } => Some(reason.to_string()),
            _ => None,
        })
        .collect();
    assert!(reasons.iter().all(|r| r == "overflow") && !reasons.is_empty());
}

#[tokio::test]
async fn a_second_refusal_is_an_error_not_a_loop() {
    let refusal = || ModelError::Api {
        provider: "openai",
        kind: tern_model::ErrorKind::ContextOverflow,
        status: Some(400),
        error_type: None,
        message: "This model's maximum context length is 10 tokens.".into(),
        request_id: None,
        retry_after: None,
        should_retry: None,
        overflow: None,
    };
    // Something to shorten (three big results), so the first refusal earns one retry.
    let model = ScriptedModel::script(vec![
        Step::Turn(calls(&[("a", "read_big")])),
        Step::Turn(calls(&[("b", "read_big")])),
        Step::Fail(refusal()),
        Step::Fail(refusal()),
    ]);
    let (agent, _) = agent(model.clone(), Arc::new(FakeTools::default()));
    let mut conv = windowed(None);
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Error);
    assert!(out.error.unwrap().contains("maximum context length"));
    assert_eq!(model.requests.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn a_refused_request_nothing_can_shorten_is_not_sent_again() {
    let refusal = ModelError::Api {
        provider: "openai",
        kind: tern_model::ErrorKind::ContextOverflow,
        status: Some(400),
        error_type: None,
        message: "This model's maximum context length is 10 tokens.".into(),
        request_id: None,
        retry_after: None,
        should_retry: None,
        overflow: None,
    };
    let model = ScriptedModel::script(vec![Step::Fail(refusal), Step::Turn(answer("never"))]);
    let (agent, _) = agent(model.clone(), Arc::new(FakeTools::default()));
    let mut conv = windowed(None);
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Error);
    let error = out.error.unwrap();
    assert!(error.contains("nothing in it can be shortened"), "{error}");
    assert!(error.contains("hint:"), "{error}");
    assert_eq!(model.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_answer_cut_by_max_tokens_is_continued_a_bounded_number_of_times() {
    let cut = |text: &str| {
        vec![
            ModelEvent::TextDelta(text.into()),
            ModelEvent::Completed {
                stop_reason: StopReason::MaxTokens,
                request_id: None,
            },
        ]
    };
    let model = ScriptedModel::script(vec![Step::Turn(cut("one ")), Step::Turn(answer("two"))]);
    let (looper, _) = agent(model.clone(), Arc::new(FakeTools::default()));
    let mut conv = windowed(None);
    let out = looper
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Success);
    assert_eq!(out.answer.as_deref(), Some("one two"));

    let model = ScriptedModel::script(vec![
        Step::Turn(cut("a")),
        Step::Turn(cut("b")),
        Step::Turn(cut("c")),
        Step::Turn(answer("never")),
    ]);
    let (looper, _) = agent(model.clone(), Arc::new(FakeTools::default()));
    let mut conv = windowed(None);
    let out = looper
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Truncated);
    assert_eq!(out.answer.as_deref(), Some("abc"));
    assert_eq!(
        model.requests.lock().unwrap().len(),
        1 + MAX_CONTINUATIONS as usize
    );
}
