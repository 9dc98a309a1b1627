//! Whether the loop's settings file (`wiggum/wiggum.toml`, which the agent can write) is the one
//! the user last allowed: a file changed since, or never allowed, is refused with what changed
//! and the command that takes it (`wiggum allow`).

use super::*;

/// Refuse a loop settings file that changed since a person last allowed it (exit 2, with the
/// changed keys): it lies in the agent's reach. A loop that never ran takes a file that only
/// tunes it (`max_iterations`, thresholds…), and refuses one that names what weakens the harness
/// (a command, a hook, an agent, a wider sandbox) until `allow`: anything could have written it.
pub fn check_allowed(home: &Path, layout: &Layout, topic: &str) -> Result<()> {
    let Some(found) = fsutil::read_opt(&layout.config())? else {
        return Ok(());
    };
    let allowed = fsutil::read_opt(&layout.allowed_settings())?;
    if allowed.as_deref() == Some(found.as_str()) {
        return Ok(());
    }
    let first = allowed.is_none() && !layout.runs_copy().exists();
    let mut changes = changes_since_allowed(home, layout)?;
    if first {
        changes.retain(|c| c.weakens);
    }
    if changes.is_empty() {
        // Only comments or layout changed, or a first file that only tunes: nothing to ask.
        return Ok(());
    }
    Err(Error::input(unallowed_message(
        layout, topic, &changes, first,
    )))
}

/// The keys the loop's settings file changes: from the bytes a person last allowed, else (a
/// loop this home never ran) what the file changes in the settings the loop would have without
/// it (the home's file and the defaults). The file must parse (the error names its line).
fn changes_since_allowed(home: &Path, layout: &Layout) -> Result<Vec<config::allow::KeyChange>> {
    let found = config::parse_layer(&layout.config(), false)?.unwrap_or_default();
    if let Some(a) = fsutil::read_opt(&layout.allowed_settings())? {
        return Ok(config::allow::diff(
            &a.parse::<toml::Table>().unwrap_or_default(),
            &found,
        ));
    }
    let effective = |loop_file: Option<PathBuf>| -> Result<toml::Table> {
        let s = config::load(&Sources {
            home: Some(home.join("wiggum.toml")),
            loop_file,
            explicit: None,
        })?;
        Ok(config::to_toml(&s)?
            .parse::<toml::Table>()
            .unwrap_or_default())
    };
    Ok(config::allow::diff(
        &effective(None)?,
        &effective(Some(layout.config()))?,
    ))
}

/// The program as the commands a refusal prints name it (with the home when it is not the
/// default one, so the command works as printed).
fn program() -> String {
    crate::ralph::progress::program(crate::config::home_to_name().as_deref())
}

/// What `start` says of a settings file it does not take: the keys, and how to allow them.
fn unallowed_message(
    layout: &Layout,
    topic: &str,
    changes: &[config::allow::KeyChange],
    first: bool,
) -> String {
    let n = changes.len();
    let s = if n == 1 { "" } else { "s" };
    let weak = changes.iter().filter(|c| c.weakens).count();
    let (what, allow) = if first {
        (
            format!("never allowed for this loop, {n} key{s} weakening the harness"),
            format!(
                "{} wiggum allow {topic} --artifact-path {}",
                program(),
                crate::ralph::progress::shell_word(layout.root())
            ),
        )
    } else {
        let weak = if weak > 0 {
            format!(", {weak} of them weakening the harness")
        } else {
            String::new()
        };
        (
            format!("changed since it was last allowed ({n} key{s}{weak})"),
            format!("{} wiggum allow {topic}", program()),
        )
    };
    let keys: Vec<String> = changes.iter().map(|c| format!("  {c}")).collect();
    format!(
        "{}: {what}; the agent can write this file, so it is not taken silently — review it, then `{allow}` (or put it back)\n{}",
        layout.config().display(),
        keys.join("\n")
    )
}

/// `wiggum allow`: take the loop's settings file as it is now. Returns what changed.
pub fn allow(home: &Path, layout: &Layout) -> Result<Vec<config::allow::KeyChange>> {
    let found = fsutil::read_opt(&layout.config())?.unwrap_or_default();
    let changes = changes_since_allowed(home, layout)?;
    fsutil::create_dir_all(layout.records())?;
    fsutil::atomic_write(&layout.allowed_settings(), found.as_bytes())?;
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_never_allowed_is_refused_with_a_command_that_works_as_printed() {
        let layout = Layout::for_loop(Path::new("/h"), "/src/my docs");
        let changes = config::allow::diff(
            &toml::Table::new(),
            &"[hooks]\non_stop = \"x\"\n".parse().unwrap(),
        );
        assert_eq!(
            unallowed_message(&layout, "docs", &changes, true),
            "/src/my docs/wiggum/wiggum.toml: never allowed for this loop, 1 key weakening the harness; the agent can write this file, so it is not taken silently — review it, then `studio-agents wiggum allow docs --artifact-path '/src/my docs'` (or put it back)\n  + hooks.on_stop: (unset) → \"x\"  (weakens the harness)"
        );
        assert!(
            unallowed_message(&layout, "docs", &changes, false).starts_with(
                "/src/my docs/wiggum/wiggum.toml: changed since it was last allowed (1 key, 1 of them weakening the harness);"
            )
        );
    }
}
