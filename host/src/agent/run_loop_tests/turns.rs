//! One turn: images, the calls' order and overlap, the repeat guard, truncated calls,
//! cancellation, interruption markers, max_steps.

use super::*;

/// Attached images go before the text of the user message; a model known to take none is sent
/// a note in their place (a session continued on a text-only model), and the `model_request`
/// event carries each image's size, not its data.
#[tokio::test]
async fn attached_images_reach_a_vision_model_and_become_notes_for_a_text_only_one() {
    let png = tern_protocol::Image {
        mime_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    for (name, sees) in [("claude-sonnet-4-5", true), ("deepseek-chat", false)] {
        let model = Arc::new(ScriptedModel {
            name,
            ..Arc::into_inner(ScriptedModel::new(vec![answer("a pixel")])).unwrap()
        });
        let (agent, events) = agent(model.clone(), Arc::new(FakeTools::default()));
        let mut conv = conversation();
        let out = agent
            .run_turn_with_images(
                &mut conv,
                "what is it?",
                vec![png.clone()],
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(out.status, RunStatus::Success);
        // The transcript keeps the image either way (a later model may take it).
        let Message::User { content } = &conv.transcript[0] else {
            panic!()
        };
        assert!(matches!(&content[0], UserContent::Image(i) if *i == png));
        let requests = model.requests.lock().unwrap();
        let Message::User { content } = &requests[0].messages[0] else {
            panic!()
        };
        match (&content[0], sees) {
            (UserContent::Image(i), true) => assert_eq!(*i, png),
            (UserContent::Text { text }, false) => {
                assert!(
                    text.contains("left out: this model takes no images"),
                    "{text}"
                )
            }
            (other, _) => panic!("{name}: {other:?}"),
        }
        assert!(matches!(&content[1], UserContent::Text { text } if text == "what is it?"));
        let logged = events
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match e {
                Event::ModelRequest { request, .. } => Some(request.to_string()),
                _ => None,
            })
            .unwrap();
        assert!(!logged.contains("iVBORw0KGgo"), "{logged}");
    }
}

#[tokio::test]
async fn results_come_back_in_the_models_order_one_per_call_and_writes_run_alone() {
    let model = ScriptedModel::new(vec![
        calls(&[("a", "read"), ("b", "write"), ("c", "write"), ("d", "read")]),
        answer("done"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (agent, events) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Success);
    assert_eq!(out.answer.as_deref(), Some("done"));
    assert_eq!(out.steps, 2);
    let requests = model.requests.lock().unwrap();
    let ids: Vec<String> = results_in(&requests[1])
        .iter()
        .map(|r| format!("{}:{}", r.call_id, r.content))
        .collect();
    assert_eq!(ids, ["a:ran a", "b:ran b", "c:ran c", "d:ran d"]);
    // Writes never overlap anything: the log is strictly start/end pairs in order.
    let log = tools.log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "start a", "end a", "start b", "end b", "start c", "end c", "start d", "end d"
        ]
    );
    let finished: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["a", "b", "c", "d"]);
}

#[tokio::test]
async fn consecutive_read_only_calls_overlap_in_time() {
    let model = ScriptedModel::new(vec![
        calls(&[
            ("r1", "read_wait"),
            ("r2", "read_wait"),
            ("r3", "read_wait"),
        ]),
        answer("ok"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (agent, _) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    let requests = model.requests.lock().unwrap();
    for r in results_in(&requests[1]) {
        assert_eq!(
            r.content,
            format!("ran {}", r.call_id),
            "ran one after another"
        );
    }
    assert_eq!(tools.max_running.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_same_call_three_times_in_a_row_is_answered_not_run() {
    let same = || calls(&[("x", "write")]);
    let model = ScriptedModel::new(vec![same(), same(), same(), answer("ok")]);
    let tools = Arc::new(FakeTools::default());
    let (agent, _) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    let requests = model.requests.lock().unwrap();
    let third = &results_in(&requests[3])[0];
    assert_eq!(third.error, Some(ErrorKind::RepeatedCall));
    assert!(
        third.content.contains("3 times in a row"),
        "{}",
        third.content
    );
    assert_eq!(tools.log.lock().unwrap().len(), 4, "only two calls ran");
}

#[tokio::test]
async fn a_truncated_call_is_explained_to_the_model_and_never_run() {
    let model = ScriptedModel::new(vec![
        vec![
            ModelEvent::ToolCallIncomplete {
                id: "t".into(),
                name: "write".into(),
                reason: "cut off by max_tokens".into(),
            },
            ModelEvent::Completed {
                stop_reason: StopReason::MaxTokens,
                request_id: None,
            },
        ],
        answer("sorry"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (agent, _) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert!(tools.log.lock().unwrap().is_empty());
    let requests = model.requests.lock().unwrap();
    let Some(Message::User { content }) = requests[1].messages.last() else {
        panic!("no user turn")
    };
    let text = format!("{content:?}");
    assert!(
        text.contains("was not run: cut off by max_tokens"),
        "{text}"
    );
}

#[tokio::test]
async fn cancelling_mid_tool_ends_the_turn_cancelled_with_a_result_for_every_call() {
    let model = ScriptedModel::new(vec![calls(&[("s", "slow"), ("w", "write")])]);
    let tools = Arc::new(FakeTools::default());
    let cancel = CancellationToken::new();
    *tools.cancel_on_slow.lock().unwrap() = Some(cancel.clone());
    let (agent, events) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    let out = agent.run_turn(&mut conv, "go", &cancel).await;
    assert_eq!(out.status, RunStatus::Cancelled);
    let Some(Message::User { content }) = conv.transcript.last() else {
        panic!("the results of the cancelled turn were not recorded")
    };
    let results: Vec<&ToolResult> = content
        .iter()
        .filter_map(|c| match c {
            UserContent::ToolResult(r) => Some(r),
            UserContent::Text { .. } | UserContent::Image(_) => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(
        results[1].error,
        Some(ErrorKind::Cancelled),
        "the write never ran"
    );
    assert_eq!(tools.log.lock().unwrap().len(), 2, "only the slow call ran");
    let finished = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::ToolCallFinished { .. }))
        .count();
    assert_eq!(finished, 2);
    // The next request tells the model this turn was interrupted.
    assert!(
        matches!(content.last(), Some(UserContent::Text { text }) if text == super::super::INTERRUPTED)
    );
}

#[test]
fn an_interrupted_answer_or_input_is_marked_once_where_the_next_request_reads_it() {
    let mut t = vec![Message::user_text("first")];
    super::super::mark_interrupted(&mut t);
    assert_eq!(t.len(), 1);
    let Message::User { content } = &t[0] else {
        panic!("not a user message")
    };
    assert!(matches!(&content[1], UserContent::Text { text } if text == super::super::INTERRUPTED));
    t.push(Message::assistant_text("half an ans"));
    super::super::mark_interrupted(&mut t);
    assert_eq!(t.len(), 3);
    let mut empty = Vec::new();
    super::super::mark_interrupted(&mut empty);
    assert!(empty.is_empty());
}

#[tokio::test]
async fn max_steps_stops_the_loop_with_its_status() {
    let model = ScriptedModel::new(vec![
        calls(&[("1", "write")]),
        calls(&[("2", "write")]),
        calls(&[("3", "write")]),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (mut agent, _) = agent(model.clone(), tools);
    agent.settings.max_steps = 2;
    let mut conv = conversation();
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::MaxSteps);
    assert_eq!(model.requests.lock().unwrap().len(), 2);
}
