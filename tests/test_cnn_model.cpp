
// Found by fuzz_onnx: an axis of a scalar (rank 0) read past the shape.
TEST(CnnModel, AxisOfAScalarIsAnError) {
  cnn::Graph g;
  g.source = "scalar.onnx";
  g.opset = 11;
  g.inputs.push_back({"x", 1, true, {}});
  g.outputs.push_back({"y", 1, false, {}});
  cnn::Node n;
  n.op = "Split";
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  cnn::Model m(std::nullopt, g);
  EXPECT_THROW(m.run(cnn::HostTensor({}, std::vector<float>{1.f})), Error);
}
