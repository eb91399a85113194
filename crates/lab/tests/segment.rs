//! Root-only tests of a lab with a shared segment (`kind = "segment"`) whose `rtlan segment`
//! fails to start: everything, the bump namespaces included, is rolled back.

mod common;

use std::path::PathBuf;

use common::{lab_name, namespaces_of, root, topo, DownOnDrop};
use rtlan_lab::{Lab, LabError, LabOptions};

const PAIR: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "seg"
kind = "segment"
[[link]]
ends = ["a", "seg"]
[[link]]
ends = ["b", "seg"]
"#;

#[test]
fn a_segment_that_fails_to_start_rolls_back_the_bumps_too() {
    if !root() {
        return;
    }
    let name = lab_name("sgb");
    let _cleanup = DownOnDrop(name.clone());
    let dir = std::env::temp_dir().join(format!("rtlan-lab-seg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("rtlan");
    std::fs::write(
        &exe,
        "#!/bin/sh\necho \"fatal: $1 cannot open p0\" >&2\nexit 2\n",
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let err = Lab::up(&topo(PAIR), &name, &LabOptions::new(&exe)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LabError::Segment { .. }), "{text}");
    assert!(text.contains("fatal: segment cannot open p0"), "{text}");
    assert!(
        namespaces_of(&name).is_empty(),
        "{:?}",
        namespaces_of(&name)
    );
    assert!(!PathBuf::from(rtlan_lab::LABS_DIR).join(&name).exists());
    std::fs::remove_dir_all(&dir).unwrap();
    // A missing executable is refused before anything is created.
    let err = Lab::up(&topo(PAIR), &name, &LabOptions::new("/nonexistent/rtlan")).unwrap_err();
    assert!(matches!(err, LabError::RtlanExe(_)), "{err}");
    assert!(namespaces_of(&name).is_empty());
}
