//! The `studio-agents` binary: parse, dispatch, map errors to exit codes (DESIGN §2).

use clap::Parser;
use studio_agents::cli::{
    Cli, Top, Wiggum, control, delegate, diff, events, gate, inspect, panel, sandbox_exec, serve,
    sign, start, status,
};

fn main() {
    let cli = Cli::parse();
    // Commands that print end quietly when their reader goes away; a process that supervises
    // agents (a foreground loop, a delegation) keeps SIGPIPE ignored and handles the error.
    let supervises = matches!(&cli.command, Top::Wiggum(Wiggum::Start(a)) if a.foreground)
        || matches!(&cli.command, Top::Delegate(_));
    if !supervises {
        studio_agents::sys::kernel::default_sigpipe();
    }
    let config = cli.config.clone();
    // Every command that accepts --config checks it, even those that do not read settings.
    if let Some(file) = &config
        && let Err(e) = studio_agents::config::load(&studio_agents::config::Sources {
            explicit: Some(file.clone()),
            ..Default::default()
        })
    {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
    let result = match &cli.command {
        Top::Wiggum(w) => match w {
            Wiggum::Start(a) => start::run(a, config),
            Wiggum::Stop(a) => control::stop(a),
            Wiggum::Merge(a) => studio_agents::cli::worktree::merge(a),
            Wiggum::Clean(a) => studio_agents::cli::worktree::clean(a),
            Wiggum::Allow(a) => control::allow(&a.topic),
            Wiggum::Doctor(a) => studio_agents::cli::doctor::doctor(a),
            Wiggum::Pause(a) => control::pause(&a.topic, true),
            Wiggum::Resume(a) => control::pause(&a.topic, false),
            Wiggum::Status(a) => status::status(a),
            Wiggum::Watch(a) => studio_agents::view::watch::run(
                &a.topic,
                studio_agents::supervisor::control::request_stop,
            ),
            Wiggum::List(a) => status::list(a),
            Wiggum::Gate(a) => gate::run(a, config),
            Wiggum::Panel(a) => panel::run(a, config),
            Wiggum::Logs(a) => inspect::logs(a),
            Wiggum::Diff(a) => diff::run(a),
            Wiggum::Summary(a) => inspect::summary(a),
            Wiggum::Sign(s) => sign::sign(s),
            Wiggum::Events(a) => events::run(a),
            Wiggum::Serve(a) => serve::run(a),
            Wiggum::Report(a) => inspect::report_cmd(a),
            Wiggum::Manifest(a) => studio_agents::cli::remote::manifest(a),
            Wiggum::RunRemote(a) => studio_agents::cli::remote::run_remote(a),
        },
        Top::Delegate(d) => delegate::run(d, config),
        Top::Skill(s) => studio_agents::cli::skill::run(s),
        Top::SandboxExec(a) => sandbox_exec::run(a),
        Top::CgroupWatch(a) => Ok(studio_agents::cli::cgroup_watch::run(a)),
        Top::Completions { shell } => Ok(studio_agents::cli::completions(*shell)),
        Top::Man => studio_agents::cli::man(),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
