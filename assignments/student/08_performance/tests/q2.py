from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_scaled_gradients(scaled_gradients, np):
    tiny = np.array([1e-08, 0.001], np.float32)
    got = scaled_gradients(tiny, 1024.0)
    assert got is not None, 'scaled_gradients returns None: replace ... with your code'
    assert got[0] > 0, 'scaled by 1024, 1e-8 survives float16'
    assert np.allclose(got, tiny, rtol=0.01), 'unscale: divide by the same scale'

