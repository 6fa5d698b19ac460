from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_scaled_gradients(scaled_gradients, np):
    tiny = np.array([1e-08, 0.001], np.float32)
    got = scaled_gradients(tiny, 1024.0)
    assert got is not None, 'scaled_gradients 返回 None：把 ... 换成你的代码'
    assert got[0] > 0, '放大 1024 倍后，1e-8 在 float16 中不会变成 0'
    assert np.allclose(got, tiny, rtol=0.01), '还原：除以同一个缩放因子'

