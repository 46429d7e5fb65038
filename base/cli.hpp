// The one front of every binary's command line: each builds a CLI::App
// (CLI11) with its options and parses through here, so all of them report a
// usage error the same way and exit with the same codes:
//   usage error: "PROG: <message>" (each line of a multi-line message
//                prefixed) and "Try 'PROG --help'." on stderr, exit 2;
//   -h/--help:   the binary's own usage text on stdout, exit 0;
//   --version:   the version and the build's options (base/version.hpp) on
//                stdout, exit 0 - for every binary, whichever way it parses.
// CLI11 reports unknown options, missing values, wrong counts of positionals
// and malformed numbers, and stops at the first; a binary that reports every
// problem at once binds its values with AddValue below and checks them
// itself. Integers go through AddU64 (decimal only). Single-thread.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"

namespace clairfs::cli {

inline constexpr int kUsageExit = 2;

// Prints `message` as a usage error of `prog` (see above); returns 2.
int UsageError(std::string_view prog, std::string_view message);

// Parses `args` (argv without argv[0]) into `app`. OK and *help = true on
// -h/--help (nothing else is checked then); InvalidArgument with CLI11's
// message on a usage error. On --version (which Parse adds to `app`) it
// prints VersionText(app's name) and ends the process with exit status 0
// before anything else is checked: the binaries that call Parse through
// their own loaders (clairfsd, clairfs-order) parse before they start
// anything.
Status Parse(CLI::App& app, std::vector<std::string> args, bool* help);

// The whole front of a main: nullopt to go on; otherwise the exit code after
// printing the help text (0) or the error (2).
std::optional<int> ParseMain(CLI::App& app, int argc, char** argv, std::string_view prog,
                             std::string_view help);

// Adds an option whose value is a decimal integer >= 0 (no sign, no octal
// or hex as CLI11's own conversion would take) into *out; anything else is a
// usage error "NAME wants a non-negative integer, got 'TEXT'".
CLI::Option* AddU64(CLI::App& app, const std::string& name, uint64_t* out);

// For the binaries that report every problem of a command line at once
// (clairfs-order, clairfsd): an option taking one value as text that never
// stops the parse. Given without a value or more than once, it is reported
// by ValueProblems together with the binary's own errors instead of by CLI11
// alone. Read it with Value().
CLI::Option* AddValue(CLI::App& app, const std::string& name);
// Whether an AddValue option was given with a value, and that value ("" when
// it was not).
bool HasValue(const CLI::Option& option);
std::string Value(const CLI::Option& option);
// After Parse: "NAME needs a value" / "NAME given twice" for each AddValue
// option of `app` so used.
std::vector<std::string> ValueProblems(const CLI::App& app);

}  // namespace clairfs::cli
