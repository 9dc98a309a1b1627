//! `studio-agents-sandbox --policy JSON -- CMD…`: the leader of every confined agent run, as a
//! small executable of its own (`cli::sandbox_exec`).

fn main() {
    std::process::exit(studio_agents::cli::sandbox_exec::small_main());
}
