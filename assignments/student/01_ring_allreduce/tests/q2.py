from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_scatter_reduce(scatter_reduce, np):
    n = 4
    chunks = [[np.full(3, 10.0 ** i) for _ in range(n)] for i in range(n)]
    out = scatter_reduce(chunks)
    assert out is not None, 'scatter_reduce returns None: replace ... with your code'
    result, sent = out
    for i in range(n):
        owned = result[i][(i + 1) % n]
        assert np.allclose(owned, 1111.0), f'node {i} should hold the full sum of its chunk'

