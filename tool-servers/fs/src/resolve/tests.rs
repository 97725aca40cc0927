//! The escape catalogue of issue 2 (item 3), plus the cases that must keep working.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use std::os::unix::fs::symlink;
use std::time::Duration;

/// `w/root` (served), `w/other` (second root in some tests), `w/root-evil`
/// and `w/outside` (never served), with a few files.
struct World {
    _tmp: tempfile::TempDir,
    w: PathBuf,
}

impl World {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        // Canonical from the start so expected paths compare equal.
        let w = std::fs::canonicalize(tmp.path()).unwrap();
        for d in ["root/a/b", "other/sub", "root-evil", "outside"] {
            std::fs::create_dir_all(w.join(d)).unwrap();
        }
        std::fs::write(w.join("root/a/b/c.txt"), "inside\n").unwrap();
        std::fs::write(w.join("other/sub/o.txt"), "other root\n").unwrap();
        std::fs::write(w.join("root-evil/secret"), "evil\n").unwrap();
        std::fs::write(w.join("outside/secret.txt"), "secret\n").unwrap();
        Self { _tmp: tmp, w }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.w.join(rel)
    }

    fn roots(&self) -> Roots {
        Roots::open(&[self.p("root")]).unwrap()
    }

    fn two_roots(&self) -> Roots {
        Roots::open(&[self.p("root"), self.p("other")]).unwrap()
    }
}

fn open(roots: &Roots, path: impl AsRef<Path>) -> Result<Resolved<'_>, ResolveError> {
    roots.resolve(path.as_ref(), Intent::Open)
}

fn write(roots: &Roots, path: impl AsRef<Path>) -> Result<Resolved<'_>, ResolveError> {
    roots.resolve(
        path.as_ref(),
        Intent::Write {
            parents: CreateParents::Yes,
        },
    )
}

fn read_all(r: &Resolved) -> String {
    use std::io::Read;
    let (mut f, _) = r.open_file().unwrap();
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    s
}

/// Runs `f` on another thread and fails the test if it does not return in time:
/// the FIFO and device cases must refuse *without blocking*.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("the call blocked for more than 5 s")
}

// ---- refused -------------------------------------------------------------

#[test]
fn sibling_with_the_root_as_string_prefix_is_outside() {
    let w = World::new();
    let roots = w.roots();
    let e = open(&roots, w.p("root-evil/secret")).unwrap_err();
    assert!(matches!(e, ResolveError::OutsideRoots { .. }), "{e}");
    assert!(e.to_string().contains("root-evil"), "{e}");
    let e = open(&roots, "../root-evil/secret").unwrap_err();
    assert!(matches!(e, ResolveError::OutsideRoots { .. }), "{e}");
    // The message names where the path points, folded: never `/x/root/../root-evil`.
    assert!(
        e.to_string()
            .contains(&format!("`{}`", w.p("root-evil/secret").display())),
        "{e}"
    );
    let e = open(&roots, "../../../../../../../../etc/passwd").unwrap_err();
    assert!(e.to_string().contains("resolves to `/etc/passwd`"), "{e}");
    // A symlink with an absolute target in the sibling is refused too.
    symlink(w.p("root-evil/secret"), w.p("root/evil")).unwrap();
    let e = open(&roots, "evil").unwrap_err();
    assert!(matches!(e, ResolveError::LinkEscapes { .. }), "{e}");
}

#[test]
fn symlink_from_inside_to_outside_is_refused() {
    let w = World::new();
    let roots = w.roots();
    symlink(w.p("outside"), w.p("root/out-dir")).unwrap();
    symlink("../outside/secret.txt", w.p("root/out-rel")).unwrap();
    symlink(w.p("outside/secret.txt"), w.p("root/a/out-abs")).unwrap();
    for path in ["out-dir/secret.txt", "out-rel", "a/out-abs", "out-dir"] {
        let e = open(&roots, path).unwrap_err();
        assert!(matches!(e, ResolveError::LinkEscapes { .. }), "{path}: {e}");
    }
    let e = open(&roots, "a/out-abs").unwrap_err();
    assert!(e.to_string().contains("a/out-abs"), "names the link: {e}");
}

#[test]
fn symlink_chain_that_ends_outside_is_refused() {
    let w = World::new();
    let roots = w.roots();
    symlink("b-link", w.p("root/a-link")).unwrap();
    symlink("a/c-link", w.p("root/b-link")).unwrap();
    symlink("../../outside/secret.txt", w.p("root/a/c-link")).unwrap();
    let e = open(&roots, "a-link").unwrap_err();
    assert!(matches!(e, ResolveError::LinkEscapes { .. }), "{e}");
}

#[test]
fn symlink_loop_is_refused() {
    let w = World::new();
    let roots = w.roots();
    symlink("loop2", w.p("root/loop1")).unwrap();
    symlink("loop1", w.p("root/loop2")).unwrap();
    let e = open(&roots, "loop1").unwrap_err();
    assert!(matches!(e, ResolveError::TooManyLinks), "{e}");
}

#[test]
fn dangling_symlink_is_never_written_through() {
    let w = World::new();
    let roots = w.roots();
    symlink(w.p("outside/new.txt"), w.p("root/dangle-out")).unwrap();
    symlink("a/new.txt", w.p("root/dangle-in")).unwrap();
    symlink("a/b/c.txt", w.p("root/live-in")).unwrap();
    for name in ["dangle-out", "dangle-in", "live-in"] {
        let e = write(&roots, name).unwrap_err();
        assert!(
            matches!(e, ResolveError::FinalSymlink { .. }),
            "{name}: {e}"
        );
    }
    assert!(!w.p("outside/new.txt").exists());
}

#[test]
fn dotdot_that_climbs_out_is_refused() {
    let w = World::new();
    let roots = w.roots();
    for path in [
        "..",
        "../outside/secret.txt",
        "a/../../outside",
        "a/b/../../../root/../outside",
    ] {
        let e = open(&roots, path).unwrap_err();
        assert!(
            matches!(e, ResolveError::OutsideRoots { .. }),
            "{path}: {e}"
        );
    }
    let e = write(&roots, "../outside/new.txt").unwrap_err();
    assert!(matches!(e, ResolveError::OutsideRoots { .. }), "{e}");
    assert!(!w.p("outside/new.txt").exists());
}

#[test]
fn absolute_path_outside_is_refused() {
    let w = World::new();
    let roots = w.roots();
    for path in [
        w.p("outside/secret.txt"),
        "/etc/passwd".into(),
        "/".into(),
        w.p(""),
    ] {
        let e = open(&roots, &path).unwrap_err();
        assert!(
            matches!(e, ResolveError::OutsideRoots { .. }),
            "{path:?}: {e}"
        );
    }
}

#[test]
fn proc_self_root_is_refused() {
    let w = World::new();
    let roots = w.roots();
    let e = open(&roots, "/proc/self/root/etc/passwd").unwrap_err();
    assert!(matches!(e, ResolveError::OutsideRoots { .. }), "{e}");
    // The magic link reached from inside: an absolute target outside the roots.
    symlink("/proc/self/root", w.p("root/magic")).unwrap();
    let e = open(&roots, "magic/etc/passwd").unwrap_err();
    assert!(matches!(e, ResolveError::LinkEscapes { .. }), "{e}");
    // Even with the (canonical) tmp dir's own proc path spelled out.
    let spelled =
        Path::new("/proc/self/root").join(w.p("root/a/b/c.txt").strip_prefix("/").unwrap());
    let e = open(&roots, spelled).unwrap_err();
    assert!(matches!(e, ResolveError::OutsideRoots { .. }), "{e}");
}

#[test]
fn fifo_is_refused_without_blocking() {
    let w = World::new();
    rfs::mknodat(
        rfs::CWD,
        w.p("root/fifo"),
        FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let roots = w.roots();
    let e = within(move || {
        let r = open(&roots, "fifo").unwrap();
        r.open_file().map(|_| ()).unwrap_err().to_string()
    });
    assert!(e.contains("FIFO"), "{e}");
    // Writing over it replaces the name; resolution itself must not block either.
    let roots = w.roots();
    within(move || write(&roots, "fifo").map(|_| ()).unwrap());
}

#[test]
fn dev_zero_is_refused_by_link_absolutely_and_as_a_root_entry() {
    let w = World::new();
    let roots = w.roots();
    symlink("/dev/zero", w.p("root/zero")).unwrap();
    let e = open(&roots, "zero").unwrap_err();
    assert!(matches!(e, ResolveError::LinkEscapes { .. }), "{e}");
    let e = open(&roots, "/dev/zero").unwrap_err();
    assert!(matches!(e, ResolveError::OutsideRoots { .. }), "{e}");
    // With /dev itself served, the device resolves but is never opened for reading.
    let dev = Roots::open(&[PathBuf::from("/dev")]).unwrap();
    let e = within(move || {
        let r = open(&dev, "zero").unwrap();
        r.open_file().map(|_| ()).unwrap_err().to_string()
    });
    assert!(e.contains("character device"), "{e}");
}

#[test]
fn nul_byte_is_refused() {
    let w = World::new();
    let e = open(&w.roots(), "a/b\0/c.txt").unwrap_err();
    assert!(matches!(e, ResolveError::Nul), "{e}");
}

#[test]
fn non_utf8_names_are_refused() {
    let w = World::new();
    let roots = w.roots();
    let name = OsStr::from_bytes(b"caf\xe9.txt");
    let e = open(&roots, Path::new(name)).unwrap_err();
    assert!(matches!(e, ResolveError::NotUtf8(_)), "{e}");
    // A symlink whose target is not UTF-8 is refused the same way.
    symlink(Path::new(name), w.p("root/bad-target")).unwrap();
    let e = open(&roots, "bad-target").unwrap_err();
    assert!(matches!(e, ResolveError::NotUtf8(_)), "{e}");
}

#[test]
fn very_long_paths_and_names_are_refused() {
    let w = World::new();
    let roots = w.roots();
    let long = "a/".repeat(3000);
    let e = open(&roots, &long).unwrap_err();
    assert!(matches!(e, ResolveError::TooLong(6000)), "{e}");
    let e = open(&roots, "x".repeat(256)).unwrap_err();
    assert!(matches!(e, ResolveError::NameTooLong(256)), "{e}");
    let e = open(&roots, "").unwrap_err();
    assert!(matches!(e, ResolveError::Empty), "{e}");
}

#[test]
fn file_used_as_directory_is_refused() {
    let w = World::new();
    let e = open(&w.roots(), "a/b/c.txt/x").unwrap_err();
    assert!(matches!(e, ResolveError::NotADirectory(_)), "{e}");
}

#[test]
fn missing_file_and_missing_parent_without_mkdir() {
    let w = World::new();
    let roots = w.roots();
    let e = open(&roots, "a/nope.txt").unwrap_err();
    assert!(matches!(e, ResolveError::NotFound(_)), "{e}");
    let e = roots
        .resolve(
            Path::new("new/file.txt"),
            Intent::Write {
                parents: CreateParents::No,
            },
        )
        .unwrap_err();
    assert!(matches!(e, ResolveError::NotFound(_)), "{e}");
    assert!(!w.p("root/new").exists());
}

#[test]
fn wrong_kind_is_reported() {
    let w = World::new();
    let roots = w.roots();
    let e = open(&roots, "a").unwrap().open_file().unwrap_err();
    assert!(e.to_string().contains("is a directory"), "{e}");
    let e = open(&roots, "a/b/c.txt").unwrap().open_dir().unwrap_err();
    assert!(e.to_string().contains("is a regular file"), "{e}");
}

// ---- allowed -------------------------------------------------------------

#[test]
fn nested_directories_resolve_to_the_real_path() {
    let w = World::new();
    let roots = w.roots();
    for path in [
        PathBuf::from("a/b/c.txt"),
        PathBuf::from("./a//b/./c.txt"),
        PathBuf::from("a/../a/b/c.txt"),
        w.p("root/a/b/c.txt"),
    ] {
        let r = open(&roots, &path).unwrap();
        assert_eq!(r.path(), w.p("root/a/b/c.txt"), "{path:?}");
        assert_eq!(read_all(&r), "inside\n");
    }
}

#[test]
fn symlink_within_the_root_is_followed() {
    let w = World::new();
    let roots = w.roots();
    symlink("a/b", w.p("root/rel")).unwrap();
    symlink(w.p("root/a/b/c.txt"), w.p("root/a/abs")).unwrap();
    let r = open(&roots, "rel/c.txt").unwrap();
    assert_eq!(r.path(), w.p("root/a/b/c.txt"));
    let r = open(&roots, "a/abs").unwrap();
    assert_eq!(read_all(&r), "inside\n");
    // Writing *under* a symlinked directory is fine: only the final name is never followed.
    let r = write(&roots, "rel/new.txt").unwrap();
    assert_eq!(r.path(), w.p("root/a/b/new.txt"));
}

#[test]
fn symlink_into_another_root_is_allowed() {
    let w = World::new();
    let roots = w.two_roots();
    symlink(w.p("other/sub"), w.p("root/to-other")).unwrap();
    symlink("../other/sub/o.txt", w.p("root/to-other-rel")).unwrap();
    let r = open(&roots, "to-other/o.txt").unwrap();
    assert_eq!(r.path(), w.p("other/sub/o.txt"));
    let r = open(&roots, "to-other-rel").unwrap();
    assert_eq!(read_all(&r), "other root\n");
    // Absolute paths in the second root work; with one root they do not.
    assert!(open(&roots, w.p("other/sub/o.txt")).is_ok());
    assert!(open(&w.roots(), "to-other/o.txt").is_err());
}

#[test]
fn creating_parent_directories_stays_inside() {
    let w = World::new();
    let roots = w.roots();
    let r = write(&roots, "new/deep/file.txt").unwrap();
    assert_eq!(r.path(), w.p("root/new/deep/file.txt"));
    assert_eq!(r.name(), Some(OsStr::new("file.txt")));
    assert!(r.stat().is_none());
    assert!(w.p("root/new/deep").is_dir());
    // An existing file resolves with its metadata.
    let r = write(&roots, "a/b/c.txt").unwrap();
    assert!(r.stat().is_some());
}

#[test]
fn root_reached_through_a_symlink() {
    let w = World::new();
    symlink(w.p("root"), w.p("root-link")).unwrap();
    let roots = Roots::open(&[w.p("root-link")]).unwrap();
    assert_eq!(roots.paths().next().unwrap(), w.p("root"));
    for path in [
        w.p("root-link/a/b/c.txt"),
        w.p("root/a/b/c.txt"),
        "a/b/c.txt".into(),
    ] {
        let r = open(&roots, &path).unwrap();
        assert_eq!(r.path(), w.p("root/a/b/c.txt"), "{path:?}");
    }
}

#[test]
fn the_root_itself_and_dot_name_a_directory() {
    let w = World::new();
    let roots = w.roots();
    for path in [PathBuf::from("."), w.p("root"), PathBuf::from("a/..")] {
        let r = open(&roots, &path).unwrap();
        assert_eq!(r.path(), w.p("root"), "{path:?}");
        assert!(r.name().is_none());
        r.open_dir().unwrap();
    }
}

#[test]
fn a_missing_root_is_a_startup_error() {
    let w = World::new();
    let e = Roots::open(&[w.p("nope")]).unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
}
