// Float functions that are not one WGSL built-in (cpu/elementwise.cpp's ew_function is their
// reference, in double).

// erf as a rational function of x on [-4, 4] (the single-precision approximation of Eigen /
// TensorFlow; |error| < 7e-8 against erf in double), +-1 beyond.
fn erf_f32(x0: f32) -> f32 {
  let x = clamp(x0, -4.0, 4.0);
  let x2 = x * x;
  var p = x2 * -2.72614225801306e-10 + 2.77068142495902e-08;
  p = p * x2 + -2.10102402082508e-06;
  p = p * x2 + -5.69250639462346e-05;
  p = p * x2 + -7.34990630326855e-04;
  p = p * x2 + -2.95459980854025e-03;
  p = p * x2 + -1.60960333262415e-02;
  p = p * x;
  var q = x2 * -1.45660718464996e-05 + -2.13374055278905e-04;
  q = q * x2 + -1.68282697438203e-03;
  q = q * x2 + -7.37332916720468e-03;
  q = q * x2 + -1.42647390514189e-02;
  return p / q;
}

// tanh through exp of a clamped argument: some drivers' tanh gives NaN for large |x|.
fn tanh_f32(x: f32) -> f32 { return 1.0 - 2.0 / (exp(2.0 * clamp(x, -20.0, 20.0)) + 1.0); }

fn softplus_f32(x: f32) -> f32 {
  if (x > 30.0) { return x; }
  return log(1.0 + exp(x));
}
