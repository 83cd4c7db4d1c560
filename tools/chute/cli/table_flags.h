#pragma once
// CLI flags from the option tables (chute/util/option_table.h): the flag is --name with '-' for
// '_', its help is the table's line (with what the default means, and the choices checked), its
// default the value it writes into, so that a command's flags say what the Python keywords say.

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <type_traits>

#include "chute/bench/option_flag.h"
#include "chute/util/error.h"
#include "chute/util/option_table.h"

namespace chute::cli {

template <typename S>
const OptionField<S>& table_field(std::string_view name) {
  const OptionField<S>* field = find_field<S>(name);
  if (field == nullptr) fail(ErrorCode::kInternal, "no option '{}' in the table", name);
  return *field;
}

/// --name with '-' for '_'; `prefix` goes before the name ("http-": --http-timeout).
inline std::string flag_name(std::string_view name, std::string_view prefix = "") {
  return bench::option_flag(std::string(prefix) + std::string(name));
}

/// --name VALUE into `target`, documented by S's table entry `name`; `note` is appended to the
/// help (what the command does differently, e.g. "0: one per usable core"); without one, what
/// the entry says its default means. A string option with choices accepts only those. `prefix`
/// goes before the flag's name (see flag_name); `also` adds other names ("--http-retries").
template <typename S, typename T>
CLI::Option* add_table_option(CLI::App& command, std::string_view name, T& target,
                              std::string_view note = "", std::string_view prefix = "",
                              std::string_view also = "") {
  const OptionField<S>& field = table_field<S>(name);
  std::string help(field.help);
  if (!note.empty()) {
    help += " (" + std::string(note) + ")";
  } else if (!field.check.none.empty()) {
    help += std::string(std::is_arithmetic_v<T> ? " (0: " : " (not given: ") +
            std::string(field.check.none) + ")";
  }
  std::string names = flag_name(name, prefix);
  if (!also.empty()) names += "," + std::string(also);
  CLI::Option* option = command.add_option(names, target, help)->capture_default_str();
  if constexpr (std::is_same_v<T, std::string>) {
    if (!field.check.choices.empty()) option->check(CLI::IsMember(field.check.choices));
  }
  return option;
}

/// --name / --no-name into `target`, documented by S's table entry `name`; `also_off`: another
/// flag that turns it off (e.g. --channels-first).
template <typename S>
CLI::Option* add_table_flag(CLI::App& command, std::string_view name, bool& target,
                            std::string_view also_off = "") {
  const OptionField<S>& field = table_field<S>(name);
  const std::string flag = flag_name(name);
  std::string names = flag + ",!--no-" + flag.substr(2);
  if (!also_off.empty()) names += ",!" + std::string(also_off);
  return command.add_flag(names, target,
                          std::string(field.help) + (target ? " (default on)" : " (default off)"));
}

}  // namespace chute::cli
