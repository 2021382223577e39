// A PNG file decoded to 8-bit RGBA pixels, for tests that look at a
// screenshot: the 8-bit RGB and RGBA images without interlacing that
// browsers write. zlib inflates, the five scanline filters are undone here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snowid::test {

struct Rgba {
  std::uint8_t r = 0, g = 0, b = 0, a = 0;
};

class PngImage {
 public:
  // The image in `bytes` (a whole file); nullopt and `why` if it is not a
  // PNG this decoder reads.
  static std::optional<PngImage> decode(const std::string& bytes, std::string& why);

  int width() const { return width_; }
  int height() const { return height_; }
  // Requires 0 <= x < width(), 0 <= y < height().
  Rgba at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) +
                           static_cast<std::size_t>(x)) *
                          4;
    return {pixels_[i], pixels_[i + 1], pixels_[i + 2], pixels_[i + 3]};
  }

 private:
  int width_ = 0;
  int height_ = 0;
  std::vector<std::uint8_t> pixels_;  // rows top to bottom, 4 bytes a pixel
};

}  // namespace snowid::test
