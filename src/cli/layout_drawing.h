// Text drawing of a layout's bit fields for `snowid layout`.
#pragma once

#include <string>

#include "snowid/layout.h"

namespace snowid::cli {

// Two rows of cells, bit ranges above field names, e.g.
//   | 63   | 62..22         | 21..17         | 16..12     | 11..0         |
//   | sign | timestamp (41) | datacenter (5) | worker (5) | sequence (12) |
std::string draw_layout(const Layout& layout);

}  // namespace snowid::cli
