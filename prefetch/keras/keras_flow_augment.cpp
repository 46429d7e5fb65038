// KerasFlowAugment: which ImageDataGenerator options draw from NumPy's global
// generator and how many values (keras/src/legacy/preprocessing/image.py,
// ImageDataGenerator.__init__ and get_random_transform; identical in tf.keras
// 2.15 keras/src/preprocessing/image.py).
#include <cstdlib>
#include <set>

#include "prefetch/keras/keras_flow.hpp"

namespace clairfs::prefetch {

namespace {

bool ParseNumber(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

// A Python int literal (what choice() accepts as a population size).
bool IsIntegerLiteral(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

// numpy legacy RandomState.choice(a) with size=None and no p: randint(0, pop),
// which draws masked 32-bit values (random_bounded_uint64_fill).
void DrawChoice(NumpyRandomState& rng, uint64_t population) { rng.RandomInterval(population - 1); }

}  // namespace

Result<KerasFlowAugment> KerasFlowAugment::Parse(std::string_view text) {
  KerasFlowAugment a;
  if (text.empty()) return a;
  // Options that never draw (they change pixels only).
  static const std::set<std::string> kNoDraw = {"horizontal_flip",
                                                "vertical_flip",
                                                "rescale",
                                                "fill_mode",
                                                "cval",
                                                "featurewise_center",
                                                "samplewise_center",
                                                "featurewise_std_normalization",
                                                "samplewise_std_normalization",
                                                "interpolation_order"};
  for (const std::string& item : Split(std::string(text), ',')) {
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("--augment: '" + item + "': " + why);
    };
    if (eq == std::string::npos || value.empty()) return bad("expected KEY=VALUE");
    if (kNoDraw.count(key)) continue;
    std::vector<std::string> parts = Split(value, ':');
    std::vector<double> nums;
    for (const std::string& p : parts) {
      double d;
      if (!ParseNumber(p, d)) return bad("'" + p + "' is not a number");
      nums.push_back(d);
    }
    if (key == "rotation_range" || key == "shear_range" || key == "channel_shift_range") {
      if (nums.size() != 1) return bad("expected one number");
      bool on = nums[0] != 0;  // Python truthiness; NaN is true
      (key == "rotation_range" ? a.rotation
       : key == "shear_range"  ? a.shear
                               : a.channel_shift) = on;
    } else if (key == "width_shift_range" || key == "height_shift_range") {
      Shift shift = Shift::kNone;
      uint64_t choices = 0;
      if (parts.size() > 1) {  // a list: choice over its elements
        shift = Shift::kChoice;
        choices = parts.size();
      } else if (nums[0] != 0) {
        // choice(int) needs a positive int; a float (or a non-positive int)
        // raises ValueError before drawing and Keras falls back to uniform.
        bool positive_int = IsIntegerLiteral(parts[0]) && nums[0] > 0;
        shift = positive_int ? Shift::kChoice : Shift::kUniform;
        choices = positive_int ? std::strtoull(parts[0].c_str(), nullptr, 10) : 0;
      }
      bool height = key == "height_shift_range";
      (height ? a.height_shift : a.width_shift) = shift;
      (height ? a.height_choices : a.width_choices) = choices;
    } else if (key == "zoom_range") {
      double lo, hi;
      if (nums.size() == 1) {
        lo = 1 - nums[0];
        hi = 1 + nums[0];
      } else if (nums.size() == 2) {
        lo = nums[0];
        hi = nums[1];
      } else {
        return bad("expected a number or LOW:HIGH");
      }
      a.zoom = !(lo == 1 && hi == 1);
    } else if (key == "brightness_range") {
      if (nums.size() != 2) return bad("expected LOW:HIGH");
      a.brightness = true;
    } else if (key == "preprocessing_function") {
      return bad("a preprocessing_function may draw from NumPy: not modelled");
    } else {
      return bad("unknown ImageDataGenerator option '" + key + "'");
    }
  }
  return a;
}

std::vector<KerasFlowAugment::Call> KerasFlowAugment::Calls() const {
  using Kind = Call::Kind;
  std::vector<Call> calls;
  auto shift = [&](Shift s, uint64_t choices) {
    if (s == Shift::kUniform) calls.push_back({Kind::kDouble, 0});
    if (s == Shift::kChoice) {
      calls.push_back({Kind::kChoice, choices});
      calls.push_back({Kind::kChoice, 2});  // * np.random.choice([-1, 1])
    }
  };
  if (rotation) calls.push_back({Kind::kDouble, 0});
  shift(height_shift, height_choices);
  shift(width_shift, width_choices);
  if (shear) calls.push_back({Kind::kDouble, 0});
  if (zoom) calls.push_back({Kind::kTwoDoubles, 0});  // uniform(size=2): one call
  calls.push_back({Kind::kDouble, 0});  // flip_horizontal: drawn even when horizontal_flip is off
  calls.push_back({Kind::kDouble, 0});  // flip_vertical
  if (channel_shift) calls.push_back({Kind::kDouble, 0});
  if (brightness) calls.push_back({Kind::kDouble, 0});
  return calls;
}

void KerasFlowAugment::DrawCall(const Call& call, NumpyRandomState& rng) {
  switch (call.kind) {
    case Call::Kind::kDouble:
      rng.NextDouble();
      break;
    case Call::Kind::kTwoDoubles:
      rng.NextDouble();
      rng.NextDouble();
      break;
    case Call::Kind::kChoice:
      DrawChoice(rng, call.population);
      break;
  }
}

void KerasFlowAugment::Draw(NumpyRandomState& rng) const {
  for (const Call& call : Calls()) DrawCall(call, rng);
}

}  // namespace clairfs::prefetch
