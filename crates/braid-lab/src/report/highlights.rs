//! The highlights of the committed report in `docs/results.md`: one row per figure with its
//! verdict, how many parts of the paper's claim hold, and the first part that does not, with
//! what braid measured for it. They are generated from the report's `data/all.json`, so the
//! results page says nothing the report does not show: `braid report --out results/report
//! --readme docs/results.md` rewrites the page's block between [`BEGIN`] and [`END`] (and runs
//! nothing), and a test keeps the committed page equal to what the committed report
//! generates.

use std::path::Path;

use anyhow::{Context as _, bail};
use serde_json::Value;

use super::summary::cell;

/// The line before the README's highlights.
pub const BEGIN: &str = "<!-- highlights: generated from results/report/data/all.json by \
    `braid report --out results/report --readme docs/results.md`; do not edit by hand -->";
/// The line after them.
pub const END: &str = "<!-- end of highlights -->";

/// "Xia et al., VLDB 2021, Fig. 12a" as "Xia et al. Fig. 12a".
fn figure(label: &str) -> String {
    let mut parts = label.split(',').map(str::trim);
    let paper = parts.next().unwrap_or(label);
    match parts.next_back() {
        Some(fig) => format!("{paper} {fig}"),
        None => paper.to_string(),
    }
}

/// A level as the summary words it ("agrees_in_direction" as "agrees in direction").
fn level(v: &Value) -> String {
    v.as_str().unwrap_or("?").replace('_', " ")
}

/// The highlights of the report whose `data/all.json` is `all`.
pub fn table(all: &Value) -> anyhow::Result<String> {
    let m = &all["machine"];
    let dirty = if m["git_dirty"].as_bool().unwrap_or(true) {
        " (with uncommitted changes)"
    } else {
        ""
    };
    let quick = if all["quick"].as_bool().unwrap_or(false) {
        " **A `--quick` smoke run: its numbers are not results.**"
    } else {
        ""
    };
    let mut out = format!(
        "The committed report: git {}{dirty}, {} cores ({}), {:.1} minutes; medians of {} runs \
         of {} s.{quick}\n\n\
         | figure | verdict | parts that hold | the first part that does not hold: braid measured |\n\
         |---|---|---:|---|\n",
        m["git"].as_str().unwrap_or("?"),
        m["cores"],
        m["cpu"].as_str().unwrap_or("?"),
        all["minutes"].as_f64().unwrap_or(f64::NAN),
        all["repeat"],
        all["seconds"],
    );
    let Some(experiments) = all["experiments"].as_array() else {
        bail!("the report has no experiments");
    };
    // The file also holds every run's results; a figure's entry is the one with its verdict.
    for e in experiments.iter().filter(|e| e.get("verdict").is_some()) {
        let v = &e["verdict"];
        // Projections from the proxies are shown in the report but counted nowhere.
        let parts: Vec<&Value> = v["parts"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .filter(|p| p["projected"].as_bool() != Some(true))
            .collect();
        let held = parts
            .iter()
            .filter(|p| p["holds"].as_bool() == Some(true))
            .count();
        let first = parts.iter().find(|p| p["holds"].as_bool() != Some(true));
        let shown = match (first, v["missing"].as_str()) {
            (Some(p), _) => format!(
                "{}: {}",
                p["claim"].as_str().unwrap_or("?"),
                p["measured"].as_str().unwrap_or("?")
            ),
            (None, Some(missing)) => format!("not measured: {missing}"),
            (None, None) => "every part holds".to_string(),
        };
        let own = if v["own_experiment"].as_bool() == Some(true) {
            " (braid's own experiment on a section with no figure: not counted)"
        } else {
            ""
        };
        out.push_str(&format!(
            "| {} | {}{own} | {held} of {} | {} |\n",
            cell(&figure(e["figure"].as_str().unwrap_or("?"))),
            level(&v["level"]),
            parts.len(),
            cell(&shown)
        ));
    }
    Ok(out)
}

/// `readme` with the text between its [`BEGIN`] and [`END`] lines replaced by `table`.
pub fn splice(readme: &str, table: &str) -> anyhow::Result<String> {
    let (Some(b), Some(e)) = (readme.find(BEGIN), readme.find(END)) else {
        bail!("the README has no highlights block: add a line `{BEGIN}` and a line `{END}`");
    };
    if e < b {
        bail!("the README's highlights block ends before it begins");
    }
    let start = b + BEGIN.len();
    Ok(format!("{}\n{table}{}", &readme[..start], &readme[e..]))
}

/// The README's highlights block as it is now (what the test compares).
#[cfg(test)]
fn block(readme: &str) -> Option<&str> {
    let start = readme.find(BEGIN)? + BEGIN.len() + 1;
    let end = readme.find(END)?;
    readme.get(start..end)
}

/// Rewrite `readme`'s highlights from the report in `out`.
pub fn write_readme(out: &Path, readme: &Path) -> anyhow::Result<()> {
    let path = out.join("data").join("all.json");
    let all: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
    )
    .with_context(|| format!("parsing {}", path.display()))?;
    let text =
        std::fs::read_to_string(readme).with_context(|| format!("reading {}", readme.display()))?;
    let new = splice(&text, &table(&all)?)?;
    crate::output::write_text(readme, &new)?;
    println!(
        "{}: highlights rewritten from {}",
        readme.display(),
        path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(git_dirty: bool) -> Value {
        serde_json::json!({
            "machine": {"git": "abc1234", "git_dirty": git_dirty, "cores": 2, "cpu": "Xeon"},
            "quick": false, "seconds": 1.0, "repeat": 3, "minutes": 30.25,
            "experiments": [
                {"figure": "Xia et al., VLDB 2021, Fig. 12a", "verdict": {"level": "agrees_in_direction",
                 "parts": [{"claim": "a", "measured": "1.5x", "holds": true},
                           {"claim": "b | c", "measured": "2.0x", "holds": false}]}},
                {"figure": "Wang & Johnson, VLDB 2014, Fig. 6", "verdict": {"level": "not_measured",
                 "parts": [], "missing": "wj-fig6-tatp"}},
                {"run": "wj-fig6-tatp", "results": []}
            ]
        })
    }

    #[test]
    fn one_row_per_figure_with_the_first_part_that_does_not_hold() {
        let t = table(&all(false)).unwrap_or_default();
        assert!(
            t.starts_with("The committed report: git abc1234, 2 cores (Xeon), 30.2 minutes"),
            "{t}"
        );
        assert!(
            t.contains("| Xia et al. Fig. 12a | agrees in direction | 1 of 2 | b \\| c: 2.0x |"),
            "{t}"
        );
        assert!(
            t.contains(
                "| Wang & Johnson Fig. 6 | not measured | 0 of 0 | not measured: wj-fig6-tatp |"
            ),
            "{t}"
        );
        let dirty = table(&all(true)).unwrap_or_default();
        assert!(
            dirty.contains("abc1234 (with uncommitted changes)"),
            "{dirty}"
        );
    }

    #[test]
    fn projections_and_own_experiments_are_not_counted_as_figures() {
        let all = serde_json::json!({
            "machine": {"git": "abc1234", "git_dirty": false, "cores": 2, "cpu": "Xeon"},
            "quick": false, "seconds": 1.0, "repeat": 3, "minutes": 1.0,
            "experiments": [
                {"figure": "Wang & Johnson, VLDB 2014, Fig. 4", "verdict": {"level": "agrees",
                 "parts": [{"claim": "a", "measured": "1.5x", "holds": true},
                           {"claim": "p", "measured": "cap", "holds": false, "projected": true}]}},
                {"figure": "Wang & Johnson, VLDB 2014, §3.2", "verdict": {"level": "agrees",
                 "own_experiment": true,
                 "parts": [{"claim": "a", "measured": "1.5x", "holds": true}]}}
            ]
        });
        let t = table(&all).unwrap_or_default();
        assert!(
            t.contains("| Wang & Johnson Fig. 4 | agrees | 1 of 1 | every part holds |"),
            "{t}"
        );
        assert!(
            t.contains("| Wang & Johnson §3.2 | agrees (braid's own experiment on a section"),
            "{t}"
        );
    }

    #[test]
    fn splicing_replaces_only_the_block_and_needs_its_markers() {
        let readme = format!("intro\n{BEGIN}\nold\n{END}\nrest\n");
        let new = splice(&readme, "new\n").unwrap_or_default();
        assert_eq!(new, format!("intro\n{BEGIN}\nnew\n{END}\nrest\n"));
        assert_eq!(block(&new), Some("new\n"));
        assert!(splice("no markers", "x").is_err());
    }

    /// The committed results page shows what the committed report measured.
    #[test]
    fn the_results_page_shows_the_committed_report() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_default();
        let all: Value =
            serde_json::from_str(&read("results/report/data/all.json")).unwrap_or(Value::Null);
        let readme = read("docs/results.md");
        let want = table(&all).unwrap_or_default();
        assert_eq!(
            block(&readme),
            Some(want.as_str()),
            "docs/results.md's highlights differ from results/report: run `cargo run --release \
             -- report --out results/report --readme docs/results.md`"
        );
    }
}
