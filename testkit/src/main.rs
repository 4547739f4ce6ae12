//! `mapwise-testkit`: the test kit's command line.
//!
//! ```text
//! mapwise-testkit install [NEED…]   install what is missing (every need when none is named)
//! mapwise-testkit needs             list the needs and what each installs
//! ```
//!
//! `.ci/run` runs `cargo run -q -p mapwise-testkit -- install` before
//! anything else; the tests call `mapwise_testkit::install::ensure` per
//! need, which does the same.

use std::process::ExitCode;

use mapwise_testkit::install::{Need, try_ensure};

const USAGE: &str = "\
usage: mapwise-testkit install [NEED...]   install what is missing of NEED... (all when none)
       mapwise-testkit needs               list the needs";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("install") => {
            let mut needs = Vec::new();
            for a in &args[1..] {
                match Need::from_name(a) {
                    Some(n) => needs.push(n),
                    None => {
                        eprintln!(
                            "mapwise-testkit: no need called {a:?} (`mapwise-testkit needs` lists them)"
                        );
                        return ExitCode::from(2);
                    }
                }
            }
            if needs.is_empty() {
                needs = Need::ALL.to_vec();
            }
            match try_ensure(&needs) {
                Ok(()) => {
                    let names: Vec<&str> = needs.iter().map(|n| n.name()).collect();
                    eprintln!("mapwise-testkit: present: {}", names.join(" "));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("mapwise-testkit: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("needs") => {
            for n in Need::ALL {
                println!("{:<13} {}", n.name(), n.what());
            }
            ExitCode::SUCCESS
        }
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
