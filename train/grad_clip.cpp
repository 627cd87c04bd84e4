#include "train/grad_clip.h"

#include <algorithm>
#include <cmath>

namespace wb::train {

double clip_coefficient(double total_norm, double max_norm) {
  if (!(max_norm > 0)) return 1.0;
  // torch/nn/utils/clip_grad.py: clip_coef = max_norm / (total_norm + 1e-6);
  // clip_coef_clamped = torch.clamp(clip_coef, max=1.0). NaN propagates (as in torch).
  const double coef = max_norm / (total_norm + 1e-6);
  return std::isnan(coef) ? coef : std::min(coef, 1.0);
}

double clip_grad_norm(std::span<float> g, double max_norm) {
  if (!(max_norm > 0)) return 0.0;
  double ss = 0;
  for (const float x : g) ss += static_cast<double>(x) * static_cast<double>(x);
  const double norm = std::sqrt(ss);
  const double coef = clip_coefficient(norm, max_norm);
  if (coef == 1.0) return norm;
  const auto c = static_cast<float>(coef);
  for (float& x : g) x *= c;
  return norm;
}

}  // namespace wb::train
