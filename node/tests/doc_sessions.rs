//! Every curl session in the docs runs as written against `raftlane dev`: docs/DOCKER.md §3 (the
//! first session, each answer compared with the one printed under it), the README's first
//! session, the engine token of docs/OPERATIONS.md and docs/MESSAGEFOUNDRY.md §2.2.
//!
//! The docs address the compose cluster over TLS, or a demo cluster on ports 7001–7003; what
//! changes against `raftlane dev` is what docs/DOCKER.md §3 says changes, and nothing else:
//! `https://nN:7001` is `http://127.0.0.1:700N`, the CA bundle and the `curl` function are left
//! out, and `/metrics` answers without a token. Ports 7001–7003 become the ones this test got;
//! paths under `/etc/mf` and `/tmp/mf` become a temporary directory.

mod common;

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The compose cluster's admin token, which the docs use throughout; the dev cluster here gets
/// the same one.
const TOKEN: &str = "dev-admin-token";

fn doc(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of the section under `heading` (a whole heading line), up to the next heading of
/// the same or a higher level outside a code block.
fn section(text: &str, heading: &str) -> String {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let mut lines = text.lines().skip_while(|l| *l != heading);
    assert!(lines.next().is_some(), "no heading {heading:?}");
    let mut out = Vec::new();
    let mut fenced = false;
    for line in lines {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !fenced && (1..=level).contains(&hashes) && line[hashes..].starts_with(' ') {
            break;
        }
        out.push(line);
    }
    out.join("\n")
}

/// The fenced code blocks of `text`: (language, lines).
fn blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some((lang.trim().to_string(), Vec::new())),
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some((_, lines)), None) => lines.push(line.to_string()),
            (None, None) => {}
        }
    }
    out
}

/// The lines of the first `sh` block under `heading` in the doc `name`.
fn first_sh_block(name: &str, heading: &str) -> Vec<String> {
    let text = doc(name);
    blocks(&section(&text, heading))
        .into_iter()
        .find(|(lang, _)| lang == "sh")
        .map(|(_, lines)| lines)
        .unwrap_or_else(|| panic!("{name}: no sh block under {heading:?}"))
}

/// Shell lines joined where a line ends in `\`.
fn joined(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut continues = false;
    for line in lines {
        match out.last_mut() {
            Some(last) if continues => {
                last.pop();
                last.push_str(line.trim_start());
            }
            _ => out.push(line.clone()),
        }
        continues = line.ends_with('\\');
    }
    out
}

/// How the docs' text reads against this dev cluster (the module docs list each change).
struct Dev {
    port: u16,
    scratch: String,
}

impl Dev {
    fn translate(&self, text: &str) -> String {
        let mut s = text.to_string();
        for n in 1..=3u16 {
            let local = format!("127.0.0.1:{}", self.port + n - 1);
            s = s
                .replace(&format!("https://n{n}:7001"), &format!("http://{local}"))
                .replace(&format!("n{n}:7001"), &local)
                .replace(&format!("127.0.0.1:{}", 7000 + n), &local);
        }
        s.replace("--cacert /etc/mf/ca.pem ", "")
            .replace("/etc/mf", &self.scratch)
            .replace("/tmp/mf", &self.scratch)
    }
}

/// One `$ command` of a console block and the output printed under it.
struct Step {
    command: String,
    printed: Vec<String>,
}

fn console_steps(lines: &[String]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for line in lines {
        match line.strip_prefix("$ ") {
            Some(command) => steps.push(Step {
                command: command.to_string(),
                printed: Vec::new(),
            }),
            None => steps
                .last_mut()
                .expect("output before any command")
                .printed
                .push(line.clone()),
        }
    }
    steps
}

/// Run `script` in one bash process; its standard output split at the lines `@@ N` it prints
/// between steps.
fn run_steps(prelude: &str, commands: &[String]) -> Vec<String> {
    let mut script = format!("{prelude}\n");
    for (i, c) in commands.iter().enumerate() {
        script.push_str(&format!("printf '\\n@@ {i}\\n'\n{c}\n"));
    }
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut parts: Vec<String> = Vec::new();
    for chunk in stdout.split("\n@@ ").skip(1) {
        let (_, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        parts.push(body.trim_end().to_string());
    }
    assert_eq!(
        parts.len(),
        commands.len(),
        "the session stopped early:\n{script}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    parts
}

/// Digits masked: the values a run changes (ids, indexes, times, fences).
fn masked(s: &str) -> String {
    let mut out = String::new();
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('9');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit())
}

/// Whether `got` has the shape of `printed`: the same keys (all of them, or with `subset` at
/// least the printed ones), arrays as long, numbers where numbers were printed, hashes where
/// hashes were, and every other value equal once digits are masked.
fn same_shape(printed: &Value, got: &Value, subset: bool, at: &str) -> Result<(), String> {
    match (printed, got) {
        (Value::Object(p), Value::Object(g)) => {
            if !subset && p.len() != g.len() {
                let pk: Vec<_> = p.keys().collect();
                let gk: Vec<_> = g.keys().collect();
                return Err(format!("{at}: keys {gk:?}, printed {pk:?}"));
            }
            for (k, pv) in p {
                let gv = g.get(k).ok_or_else(|| format!("{at}: no field {k:?}"))?;
                same_shape(pv, gv, subset, &format!("{at}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(p), Value::Array(g)) if p.len() == g.len() => p
            .iter()
            .zip(g)
            .enumerate()
            .try_for_each(|(i, (pv, gv))| same_shape(pv, gv, subset, &format!("{at}[{i}]"))),
        (Value::Number(_), Value::Number(_)) => Ok(()),
        (Value::String(p), Value::String(g)) if is_hash(p) && is_hash(g) => Ok(()),
        (Value::String(p), Value::String(g)) if masked(p) == masked(g) => Ok(()),
        (p, g) if p == g => Ok(()),
        (p, g) => Err(format!("{at}: {g}, printed {p}")),
    }
}

/// A printed output trimmed with `...` lines, read as the JSON it stands for: those lines and
/// the commas they leave dangling removed.
fn trimmed_json(printed: &[String]) -> Option<Value> {
    let kept: Vec<&str> = printed
        .iter()
        .map(|l| l.as_str())
        .filter(|l| !matches!(l.trim(), "..." | "...,"))
        .collect();
    let mut text = String::new();
    for (i, line) in kept.iter().enumerate() {
        let next = kept.get(i + 1).map_or("", |l| l.trim_start());
        let closes = next.starts_with('}') || next.starts_with(']');
        text.push_str(if closes {
            line.trim_end_matches(',')
        } else {
            line
        });
        text.push('\n');
    }
    serde_json::from_str(&text).ok()
}

/// Compare one step's output with what the doc printed under it.
fn check_step(printed: &[String], got: &str) -> Result<(), String> {
    let whole = printed.join("\n");
    if let Ok(p) = serde_json::from_str::<Value>(&whole) {
        let g: Value = serde_json::from_str(got).map_err(|e| format!("not JSON ({e}): {got}"))?;
        return same_shape(&p, &g, false, "");
    }
    if printed
        .iter()
        .any(|l| l.trim().trim_end_matches(',') == "...")
    {
        let p = trimmed_json(printed).ok_or("the printed output is not JSON once trimmed")?;
        let g: Value = serde_json::from_str(got).map_err(|e| format!("not JSON ({e}): {got}"))?;
        return same_shape(&p, &g, true, "");
    }
    let got_lines: Vec<&str> = got.lines().collect();
    if got_lines.len() != printed.len() {
        return Err(format!(
            "{} lines, printed {}: {got}",
            got_lines.len(),
            printed.len()
        ));
    }
    for (p, g) in printed.iter().zip(got_lines) {
        match (
            serde_json::from_str::<Value>(p),
            serde_json::from_str::<Value>(g),
        ) {
            (Ok(pv), Ok(gv)) => same_shape(&pv, &gv, false, "")?,
            _ if masked(p) == masked(g) => {}
            _ => return Err(format!("{g:?}, printed {p:?}")),
        }
    }
    Ok(())
}

fn have_curl() -> bool {
    if Command::new("curl").arg("--version").output().is_ok() {
        return true;
    }
    println!("note: curl is not installed; skipping (apt-get install curl)");
    false
}

/// docs/DOCKER.md §3: each step's answer has the shape of the one printed under it.
fn docker_first_session(dev: &Dev) {
    let text = doc("docs/DOCKER.md");
    let sec = section(&text, "## 3. A first session with curl");
    let blocks = blocks(&sec);
    let (_, setup) = blocks
        .iter()
        .find(|(lang, _)| lang == "sh")
        .expect("the session's set-up block");
    // Against dev: no CA bundle, no curl function (the section says so).
    let mut prelude = Vec::new();
    let mut skipping = false;
    for line in setup {
        let drop = skipping || line.contains("CURL_CA_BUNDLE") || line.starts_with("curl()");
        skipping = drop && line.ends_with('\\');
        if !drop {
            prelude.push(dev.translate(line));
        }
    }
    let mut steps = Vec::new();
    for (lang, lines) in &blocks {
        if lang == "console" {
            steps.extend(console_steps(lines));
        }
    }
    assert!(
        steps.len() >= 10,
        "only {} steps in DOCKER.md §3",
        steps.len()
    );
    let commands: Vec<String> = steps.iter().map(|s| dev.translate(&s.command)).collect();
    let outputs = run_steps(&prelude.join("\n"), &commands);
    let mut failures = Vec::new();
    for ((step, command), got) in steps.iter().zip(&commands).zip(&outputs) {
        let mut printed: Vec<String> = step.printed.iter().map(|l| dev.translate(l)).collect();
        // The compose cluster wants a token for /metrics; dev does not (DOCKER.md §3 says so).
        if command.contains("/dev/null -w '%{http_code}") && command.ends_with("/metrics") {
            printed = vec!["200".to_string()];
        }
        if let Err(e) = check_step(&printed, got) {
            failures.push(format!("$ {command}\n  {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "DOCKER.md §3:\n{}",
        failures.join("\n")
    );
}

/// Run a sh block's commands one by one; each answers JSON without an `error`.
fn run_sh_block(dev: &Dev, name: &str, env: &str, lines: &[String]) -> Vec<Value> {
    let commands: Vec<String> = joined(lines)
        .iter()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| dev.translate(l))
        .collect();
    let outputs = run_steps(env, &commands);
    let mut answers = Vec::new();
    for (command, got) in commands.iter().zip(outputs) {
        if !command.starts_with("curl ") || command.contains("> ") {
            continue;
        }
        let answer: Value = serde_json::from_str(&got)
            .unwrap_or_else(|e| panic!("{name}: $ {command}\nnot JSON ({e}): {got}"));
        assert!(
            answer.get("error").is_none(),
            "{name}: $ {command}\n{answer}"
        );
        answers.push(answer);
    }
    answers
}

/// The README's first session: an enqueue, a claim of it and the audit chain's check.
fn readme_first_session(dev: &Dev) {
    let lines = first_sh_block("README.md", "## A first session");
    let answers = run_sh_block(
        dev,
        "README.md",
        &format!("export RAFTLANE_ADMIN_TOKEN={TOKEN}"),
        &lines,
    );
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert!(answers[0].get("message_id").is_some(), "{}", answers[0]);
    assert_eq!(answers[1]["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(answers[2]["ok"], Value::Bool(true), "{}", answers[2]);
}

/// An engine token made as docs/MESSAGEFOUNDRY.md §2.2 and docs/OPERATIONS.md make it: the
/// file written holds a token that reads the cluster.
fn engine_token_sessions(dev: &Dev) {
    let lines = first_sh_block("docs/MESSAGEFOUNDRY.md", "### 2.2 A token for the engines");
    run_sh_block(
        dev,
        "MESSAGEFOUNDRY.md §2.2",
        &format!("export ADMIN_TOKEN={TOKEN}"),
        &lines,
    );
    token_works(dev, &format!("{}/raftlane-token", dev.scratch));

    let ops = doc("docs/OPERATIONS.md");
    let curl: Vec<String> = blocks(&ops)
        .into_iter()
        .flat_map(|(_, lines)| joined(&lines))
        .filter(|l| l.starts_with("curl ") && l.contains("/v1/tokens"))
        .collect();
    assert!(!curl.is_empty(), "OPERATIONS.md makes no engine token");
    run_sh_block(dev, "OPERATIONS.md", "", &curl);
    token_works(dev, &format!("{}/token", dev.scratch));
}

fn token_works(dev: &Dev, file: &str) {
    let token = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let addr = format!("127.0.0.1:{}", dev.port);
    let answer = common::http(&addr, token.trim(), "GET", "/v1/stats", None);
    assert_eq!(
        answer.as_ref().map(|a| a.0),
        Some(200),
        "{file}: {answer:?}"
    );
}

#[test]
fn every_curl_session_in_the_docs_runs_against_dev() {
    if !have_curl() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let cluster = common::start_dev(root.path(), TOKEN);
    let scratch = root.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let dev = Dev {
        port: cluster.first_port(),
        scratch: scratch.display().to_string(),
    };
    docker_first_session(&dev);
    readme_first_session(&dev);
    engine_token_sessions(&dev);
}
