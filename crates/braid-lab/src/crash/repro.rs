//! Command lines built from a crash test's own: the options forwarded to the kill-mode child,
//! and the `braid crash-test ...` line that replays one failed round (or combination), printed
//! as the last line of every failure report.

use super::args::{CrashArgs, CrashKind};

/// Flags the command lines built here state themselves (each takes a value).
const STATED: &[&str] = &[
    "--scheme",
    "--logging",
    "--records",
    "--device",
    "--stripe",
    "--stripe-kb",
    "--gsn-rfa",
    "--mode",
    "--json",
    "--rounds",
    "--kill-rounds",
    "--power-rounds",
];

/// Flags of the parent alone (no value).
const PARENT_SWITCHES: &[&str] = &["--all", "--per-scheme"];

/// The options after `crash-test` in `argv`, less the flags in `drop` (with their values) and
/// the switches in `switches`.
fn own_options(
    argv: impl IntoIterator<Item = String>,
    drop: &[&str],
    switches: &[&str],
) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = argv.into_iter().skip_while(|a| a != "crash-test").skip(1);
    while let Some(a) = it.next() {
        let name = a.split('=').next().unwrap_or_default();
        if switches.contains(&a.as_str()) {
            continue;
        }
        if drop.contains(&name) {
            if !a.contains('=') {
                it.next();
            }
            continue;
        }
        out.push(a);
    }
    out
}

/// The combination under test, stated explicitly (under `--all` the command line does not
/// name it).
fn combination(args: &CrashArgs) -> Vec<String> {
    let mut out = vec![
        "--scheme".to_string(),
        args.scheme.to_string(),
        "--logging".to_string(),
        args.logging.name().to_string(),
        "--device".to_string(),
        args.device.name().to_string(),
    ];
    if args.engine.records != braid_engine::log::Records::Txn {
        out.extend([
            "--records".to_string(),
            args.engine.records.name().to_string(),
        ]);
    }
    if args.engine.gsn.rfa {
        out.extend(["--gsn-rfa".to_string(), "on".to_string()]);
    }
    if args.engine.stripe > 1 {
        out.extend([
            "--stripe".to_string(),
            args.engine.stripe.to_string(),
            "--stripe-kb".to_string(),
            args.engine.stripe_kb.to_string(),
        ]);
    }
    out
}

/// The kill-mode child's options: the parent's own (`argv` is the parent's command line), so
/// every engine, scheme and workload flag reaches it, with the combination under test stated
/// and the parent-only flags left out.
pub fn child_args(args: &CrashArgs, argv: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = own_options(argv, STATED, PARENT_SWITCHES);
    out.extend(combination(args));
    out
}

/// The `braid crash-test` command line that replays `round` of the combination `args` names
/// (`argv` is the command line it ran under): every option given, the combination, the mode,
/// the seed and the round. With `--same-db` a round needs the rounds before it, so the line
/// runs rounds 0 to `round`; with no round (a combination that failed before its rounds), it
/// runs the combination's rounds.
pub fn command(
    args: &CrashArgs,
    argv: impl IntoIterator<Item = String>,
    round: Option<usize>,
) -> String {
    let drop: Vec<&str> = STATED
        .iter()
        .copied()
        .chain(["--seed", "--round"])
        .collect();
    let mut words = vec!["braid".to_string(), "crash-test".to_string()];
    words.extend(own_options(argv, &drop, PARENT_SWITCHES));
    words.extend(combination(args));
    let mode = match args.mode {
        CrashKind::Kill => "kill",
        CrashKind::Power => "power",
    };
    words.extend(["--mode".into(), mode.into()]);
    words.extend(["--seed".into(), args.seed.to_string()]);
    match round {
        Some(r) if args.same_db => words.extend(["--rounds".into(), (r + 1).to_string()]),
        Some(r) => words.extend(["--round".into(), r.to_string()]),
        None => words.extend(["--rounds".into(), args.rounds.to_string()]),
    }
    words
        .iter()
        .map(|w| shell_word(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `w` as one shell word: as it is when it is plain, else in single quotes.
fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        crash: CrashArgs,
    }

    fn argv(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    fn parse(words: &[String]) -> CrashArgs {
        let mut argv = vec!["crash-test".to_string()];
        argv.extend(words.iter().skip(2).cloned());
        Cli::try_parse_from(argv).unwrap().crash
    }

    #[test]
    fn a_failed_round_of_the_matrix_names_its_combination_seed_and_round() {
        let line = "braid crash-test --all --per-scheme --kill-rounds 3 --power-rounds=20 \
                    --max-ms 200 --checkpoint-interval 0.01 --json /tmp/x.json --seed 9 --cc occ";
        let mut args = parse(&argv(line));
        args.all = false;
        args.scheme = "taurus";
        args.logging = braid_engine::log::LogKind::Command;
        args.device = crate::common::DeviceKind::File;
        args.mode = CrashKind::Power;
        let cmd = command(&args, argv(line), Some(17));
        assert_eq!(
            cmd,
            "braid crash-test --max-ms 200 --checkpoint-interval 0.01 --cc occ --scheme taurus \
             --logging command --device file --mode power --seed 9 --round 17"
        );
        // The line parses back to the same combination, seed and round.
        let again = parse(&argv(&cmd));
        assert!(!again.all);
        assert_eq!(
            (again.scheme, again.logging, again.device, again.mode),
            (args.scheme, args.logging, args.device, args.mode)
        );
        assert_eq!((again.seed, again.round, again.max_ms), (9, Some(17), 200));
        assert_eq!(again.engine.cc, braid_engine::Cc::Occ);
    }

    #[test]
    fn same_db_rounds_replay_from_the_first_and_odd_words_are_quoted() {
        let line = "braid crash-test --mode kill --workload tpcc --same-db --rounds 50 \
                    --dir /tmp/a-b --round 3";
        let args = parse(&argv(line));
        let cmd = command(&args, argv(line), Some(4));
        assert!(cmd.ends_with("--mode kill --seed 1 --rounds 5"), "{cmd}");
        assert!(!cmd.contains("--round "), "{cmd}");
        assert_eq!(shell_word("a b'c"), r"'a b'\''c'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn the_child_gets_the_parents_options_and_the_combination() {
        let line = "braid crash-test --all --rounds 4 --max-ms 150 --logs 2";
        let mut args = parse(&argv(line));
        args.scheme = "gsn";
        let child = child_args(&args, argv(line));
        assert_eq!(
            child.join(" "),
            "--max-ms 150 --logs 2 --scheme gsn --logging data --device pmem"
        );
    }
}
