#pragma once
// The command-line flag of an option table's entry (chute/util/option_table.h): --name with '-'
// for '_' ("batch_size" -> "--batch-size"). The CLI makes its flags with it and the bench's
// checks name them with it.

#include <string>
#include <string_view>

namespace chute::bench {

inline std::string option_flag(std::string_view name) {
  std::string flag = "--" + std::string(name);
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  return flag;
}

}  // namespace chute::bench
