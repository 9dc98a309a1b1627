use std::os::unix::fs::symlink;

use super::*;
use crate::sys::fsutil;

/// A guarded root and, beside it, a directory standing for the user's files outside it.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().canonicalize().unwrap();
    let root = base.join("repo");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("wiggum")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("bashrc"), "mine\n").unwrap();
    guard(&root);
    (d, root, outside)
}

#[test]
fn writes_through_a_planted_file_link_replace_the_link_not_the_target() {
    let (_d, root, outside) = setup();
    let p = root.join("wiggum/state.json");
    symlink(outside.join("bashrc"), &p).unwrap();
    fsutil::atomic_write(&p, b"{}").unwrap();
    assert_eq!(
        std::fs::read_to_string(outside.join("bashrc")).unwrap(),
        "mine\n"
    );
    assert!(!is_link(&p));
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "{}");
}

#[test]
fn an_append_through_a_planted_link_removes_the_link() {
    let (_d, root, outside) = setup();
    let p = root.join("wiggum/runs.jsonl");
    symlink(outside.join("bashrc"), &p).unwrap();
    fsutil::append_line(&p, "{\"record\":1}").unwrap();
    assert_eq!(
        std::fs::read_to_string(outside.join("bashrc")).unwrap(),
        "mine\n"
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"record\":1}\n");
}

#[test]
fn a_directory_link_on_the_way_is_refused_for_every_operation() {
    let (_d, root, outside) = setup();
    symlink(&outside, root.join("wiggum/final")).unwrap();
    let target = root.join("wiggum/final/bashrc");
    let err = fsutil::atomic_write(&target, b"evil")
        .unwrap_err()
        .to_string();
    assert!(err.contains("symbolic link"), "{err}");
    assert!(fsutil::append_line(&target, "evil").is_err());
    assert!(
        fsutil::read(&target).is_err(),
        "a read through the link is refused too"
    );
    assert!(fsutil::create_dir_all(&root.join("wiggum/final/sub")).is_err());
    assert!(fsutil::remove_file_opt(&target).is_err());
    assert_eq!(
        std::fs::read_to_string(outside.join("bashrc")).unwrap(),
        "mine\n"
    );
    assert!(!outside.join("sub").exists());
}

#[test]
fn removing_a_linked_directory_removes_the_link_and_leaves_its_target() {
    let (_d, root, outside) = setup();
    let p = root.join("wiggum/discarded");
    symlink(&outside, &p).unwrap();
    fsutil::remove_dir_all_opt(&p).unwrap();
    assert!(!p.exists() && !is_link(&p));
    assert_eq!(
        std::fs::read_to_string(outside.join("bashrc")).unwrap(),
        "mine\n"
    );
    // A real tree with a link inside: the tree goes, the link's target stays.
    let tree = root.join("wiggum/iterations/001-100");
    std::fs::create_dir_all(&tree).unwrap();
    symlink(&outside, tree.join("escape")).unwrap();
    fsutil::remove_dir_all_opt(&root.join("wiggum/iterations")).unwrap();
    assert!(!root.join("wiggum/iterations").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("bashrc")).unwrap(),
        "mine\n"
    );
}

#[test]
fn the_root_swapped_for_a_link_is_refused() {
    let (_d, root, outside) = setup();
    std::fs::remove_dir_all(&root).unwrap();
    symlink(&outside, &root).unwrap();
    assert!(fsutil::atomic_write(&root.join("bashrc"), b"evil").is_err());
    assert_eq!(
        std::fs::read_to_string(outside.join("bashrc")).unwrap(),
        "mine\n"
    );
}

fn names(p: &str) -> Vec<&OsStr> {
    p.split('/').map(OsStr::new).collect()
}

#[test]
fn the_component_walk_refuses_links_as_openat2_does() {
    let (_d, root, outside) = setup();
    symlink(&outside, root.join("wiggum/final")).unwrap();
    std::fs::create_dir_all(root.join("wiggum/real/deeper")).unwrap();
    let fd = open_root(&root).unwrap();
    assert!(walk(&fd, &names("wiggum/final")).is_err());
    assert!(walk(&fd, &names("wiggum/real/deeper")).is_ok());
    assert!(open_dir_in(&fd, &names("wiggum/final")).is_err());
    assert!(open_dir_in(&fd, &names("wiggum/real/deeper")).is_ok());
}

#[test]
fn paths_outside_every_guarded_root_are_opened_as_usual() {
    let (_d, _root, outside) = setup();
    // The user's own links outside the loop (a home on another disk) keep working.
    let link = outside.join("linked");
    std::fs::create_dir_all(outside.join("real")).unwrap();
    symlink(outside.join("real"), &link).unwrap();
    fsutil::atomic_write(&link.join("f"), b"ok").unwrap();
    assert_eq!(
        std::fs::read_to_string(outside.join("real/f")).unwrap(),
        "ok"
    );
}

#[test]
fn modes_of_replaced_files_are_kept_and_new_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, root, _outside) = setup();
    let p = root.join("wiggum/hook");
    std::fs::write(&p, "x").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    fsutil::atomic_write(&p, b"y").unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&p), 0o755);
    let fresh = root.join("wiggum/new");
    fsutil::atomic_write(&fresh, b"z").unwrap();
    assert_eq!(mode(&fresh), 0o600);
    // No temp file is left behind.
    let left: Vec<_> = std::fs::read_dir(root.join("wiggum"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(left.is_empty());
}

#[test]
fn a_tree_of_any_depth_and_read_only_directories_are_removed_without_following_links() {
    use rustix::fs::{Mode, OFlags};
    let (_d, root, outside) = setup();
    let top = root.join("deep");
    // 5,000 directories deep, a file and a link out at the bottom.
    let fd = deep_tree(&top, 5000);
    let f = rustix::fs::openat(
        &fd,
        "f",
        OFlags::CREATE | OFlags::WRONLY,
        Mode::from_raw_mode(0o600),
    )
    .unwrap();
    drop(f);
    rustix::fs::symlinkat(outside.as_path(), &fd, "out").unwrap();
    // A directory its owner made read-only, and one it made unreadable.
    for (name, mode) in [("ro", 0o500), ("none", 0o000)] {
        let d = top.join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("x"), "x").unwrap();
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    }
    assert!(remove(&top).unwrap());
    assert!(!top.exists());
    let left: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["wiggum"], "nothing moved aside is left");
    assert!(outside.exists(), "the link's target stays");
}

#[test]
fn a_deep_tree_outside_every_guarded_root_is_removed_too() {
    let d = tempfile::tempdir().unwrap();
    let top = d.path().join("tmpdir");
    deep_tree(&top, 5000);
    fsutil::remove_dir_all_opt(&top).unwrap();
    assert!(!top.exists());
    fsutil::remove_dir_all_opt(&top).unwrap();
}

/// A directory `top` with a chain of `depth` directories in it; the deepest one, open.
fn deep_tree(top: &Path, depth: usize) -> OwnedFd {
    use rustix::fs::{Mode, OFlags};
    std::fs::create_dir(top).unwrap();
    let flags = OFlags::DIRECTORY | OFlags::RDONLY;
    let mut fd = rustix::fs::openat(rustix::fs::CWD, top, flags, Mode::empty()).unwrap();
    for _ in 0..depth {
        rustix::fs::mkdirat(&fd, "d", Mode::from_raw_mode(0o700)).unwrap();
        fd = rustix::fs::openat(&fd, "d", flags, Mode::empty()).unwrap();
    }
    fd
}
