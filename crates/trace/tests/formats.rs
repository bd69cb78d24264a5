//! The kernel's own format files parse, and fields sit where they say.
#![allow(clippy::unwrap_used)]

mod common;

use common::root_guard;
use iolab_trace::{EventRequest, FieldKind, SessionConfig, TraceSession};

/// `offset:N;` of field `name` in a format file, read by plain text search.
fn offset_in(text: &str, name: &str) -> usize {
    let line = text
        .lines()
        .find(|l| {
            let decl = l.split(';').next().unwrap();
            let decl = decl.split('[').next().unwrap();
            decl.ends_with(&format!(" {name}"))
        })
        .unwrap();
    let at = line.find("offset:").unwrap() + "offset:".len();
    line[at..].split(';').next().unwrap().parse().unwrap()
}

#[test]
fn real_format_files_parse() {
    let Some((guard, _dir)) = root_guard("real_format_files_parse") else {
        return;
    };
    let config = SessionConfig::new(vec![
        EventRequest::new("sched", "sched_switch").stacktrace(""),
        EventRequest::new("block", "block_rq_complete"),
        EventRequest::new("sched", "sched_process_exec"),
    ]);
    let session = TraceSession::start(&guard, config).unwrap();
    let events = session.instance_path().join("events");
    let text = std::fs::read_to_string(events.join("sched/sched_switch/format")).unwrap();
    let switch = session.format("sched", "sched_switch").unwrap();
    for name in [
        "prev_pid",
        "next_pid",
        "prev_state",
        "prev_comm",
        "common_pid",
    ] {
        assert_eq!(
            switch.field(name).unwrap().offset,
            offset_in(&text, name),
            "{name}"
        );
    }
    assert_eq!(
        switch.field("prev_comm").unwrap().kind,
        FieldKind::Array { len: 16 }
    );
    assert!(switch.field("prev_pid").unwrap().signed);
    let id: u16 = text
        .lines()
        .find_map(|l| l.strip_prefix("ID: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(switch.id, id);
    assert_eq!(session.formats().get(id).unwrap().name, "sched_switch");

    let complete = session.format("block", "block_rq_complete").unwrap();
    assert_eq!(complete.field("cmd").unwrap().kind, FieldKind::DataLoc);
    assert_eq!(
        complete.field("rwbs").unwrap().kind,
        FieldKind::Array { len: 10 }
    );
    let exec = session.format("sched", "sched_process_exec").unwrap();
    assert_eq!(exec.field("filename").unwrap().kind, FieldKind::DataLoc);

    // The stack entry's format is loaded for the trigger.
    let stack = session.format("ftrace", "kernel_stack").unwrap();
    assert!(matches!(
        stack.field("caller").unwrap().kind,
        FieldKind::Array { .. }
    ));
    assert_eq!(stack.field("size").unwrap().size, 4);
    session.finish(&mut |_| {}).unwrap();
}
