from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_fit_link(fit_link):
    got = fit_link([1000000.0, 2000000.0, 3000000.0], [0.011, 0.021, 0.031])
    assert got is not None, 'fit_link 返回 None：把 ... 换成你的代码'
    latency, rate = got
    assert abs(latency - 0.001) < 1e-09 and abs(rate - 100000000.0) < 1, f'应为 0.001 s 和 1e8 B/s，而不是 {got}'

