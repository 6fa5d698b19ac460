from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_scatter_reduce(scatter_reduce, np):
    n = 4
    chunks = [[np.full(3, 10.0 ** i) for _ in range(n)] for i in range(n)]
    out = scatter_reduce(chunks)
    assert out is not None, 'scatter_reduce 返回 None：把 ... 换成你的代码'
    result, sent = out
    for i in range(n):
        owned = result[i][(i + 1) % n]
        assert np.allclose(owned, 1111.0), f'节点 {i} 应持有它那个分块的完整和'

