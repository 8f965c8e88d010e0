//! `haptics`: the command-line front end. See `haptics --help`.

fn main() {
    // Sparse solves run on one thread: the haptic and render threads own the other
    // cores at run time, and for the bundled meshes faer's thread pool costs more than it
    // saves (the beam demo steps 30% faster sequentially).
    faer::set_global_parallelism(faer::Par::Seq);
    // Fault-injection tests set HAPTICS_INJECT_FAULT (see haptics::io::fault).
    if let Err(e) = haptics::io::fault::inject_from_env() {
        eprintln!("{e}");
        std::process::exit(2);
    }
    if let Err(err) = haptics_app::cli::run() {
        // Each distinct message once: a cause already in the line before is skipped.
        for line in haptics_app::cli::error_lines(&err) {
            eprintln!("{line}");
        }
        std::process::exit(1);
    }
}
