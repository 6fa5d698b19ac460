from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_biggest_share(biggest_share, parts):
    got = biggest_share(parts)
    assert got is not None, 'biggest_share 返回 None：把 ... 换成你的代码'
    name, share = got
    assert name == 'compute' and abs(share - 0.42) < 1e-09, f'你的结果是 {got}'

