#include "png_image.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>

namespace snowid::test {
namespace {

std::uint32_t big_endian(const std::string& bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

// The Paeth predictor of the PNG specification (9.4).
int paeth(int left, int up, int up_left) {
  const int p = left + up - up_left;
  const int pa = std::abs(p - left);
  const int pb = std::abs(p - up);
  const int pc = std::abs(p - up_left);
  if (pa <= pb && pa <= pc) return left;
  if (pb <= pc) return up;
  return up_left;
}

}  // namespace

std::optional<PngImage> PngImage::decode(const std::string& bytes, std::string& why) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 8 || bytes.compare(0, 8, kSignature, 8) != 0) {
    why = "not a PNG file";
    return std::nullopt;
  }
  std::size_t width = 0;
  std::size_t height = 0;
  std::size_t channels = 0;
  std::string compressed;
  for (std::size_t at = 8; at + 12 <= bytes.size();) {
    const std::size_t length = big_endian(bytes, at);
    const std::string type = bytes.substr(at + 4, 4);
    if (at + 12 + length > bytes.size()) break;
    const std::size_t data = at + 8;
    if (type == "IHDR") {
      width = big_endian(bytes, data);
      height = big_endian(bytes, data + 4);
      const int depth = static_cast<unsigned char>(bytes[data + 8]);
      const int color = static_cast<unsigned char>(bytes[data + 9]);
      const int interlace = static_cast<unsigned char>(bytes[data + 12]);
      channels = color == 6 ? 4 : color == 2 ? 3 : 0;
      if (depth != 8 || channels == 0 || interlace != 0 || width == 0 || height == 0 ||
          width > 16384 || height > 16384) {
        why = "unsupported PNG: depth " + std::to_string(depth) + ", color type " +
              std::to_string(color) + ", interlace " + std::to_string(interlace);
        return std::nullopt;
      }
    } else if (type == "IDAT") {
      compressed.append(bytes, data, length);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + length;
  }
  if (channels == 0 || compressed.empty()) {
    why = "no IHDR or IDAT chunk";
    return std::nullopt;
  }
  const std::size_t stride = width * channels;
  std::vector<std::uint8_t> raw((stride + 1) * height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(compressed.data()),
                 compressed.size()) != Z_OK ||
      raw_size != raw.size()) {
    why = "image data does not inflate to " + std::to_string(raw.size()) + " bytes";
    return std::nullopt;
  }
  PngImage image;
  image.width_ = static_cast<int>(width);
  image.height_ = static_cast<int>(height);
  image.pixels_.resize(width * height * 4);
  // Undo each scanline's filter in place (PNG 9.2), then widen to RGBA.
  std::vector<std::uint8_t> previous(stride, 0);
  for (std::size_t y = 0; y < height; ++y) {
    std::uint8_t* line = raw.data() + y * (stride + 1);
    const int filter = line[0];
    std::uint8_t* row = line + 1;
    for (std::size_t i = 0; i < stride; ++i) {
      const int left = i >= channels ? row[i - channels] : 0;
      const int up = previous[i];
      const int up_left = i >= channels ? previous[i - channels] : 0;
      int predicted = 0;
      switch (filter) {
        case 0:
          break;
        case 1:
          predicted = left;
          break;
        case 2:
          predicted = up;
          break;
        case 3:
          predicted = (left + up) / 2;
          break;
        case 4:
          predicted = paeth(left, up, up_left);
          break;
        default:
          why = "unknown filter " + std::to_string(filter) + " on row " + std::to_string(y);
          return std::nullopt;
      }
      row[i] = static_cast<std::uint8_t>((row[i] + predicted) & 0xff);
    }
    std::memcpy(previous.data(), row, stride);
    for (std::size_t x = 0; x < width; ++x) {
      std::uint8_t* out = &image.pixels_[(y * width + x) * 4];
      const std::uint8_t* in = row + x * channels;
      out[0] = in[0];
      out[1] = in[1];
      out[2] = in[2];
      out[3] = channels == 4 ? in[3] : 255;
    }
  }
  return image;
}

}  // namespace snowid::test
