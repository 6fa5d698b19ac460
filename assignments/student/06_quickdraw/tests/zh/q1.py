from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 3

@test_case(points=None, hidden=False)
def test_map_at_3(map_at_3):
    got = map_at_3(['cat', 'dog'], [['cat', 'dog', 'sun'], ['cat', 'sun', 'dog']])
    assert got is not None, 'map_at_3 返回 None：把 ... 换成你的代码'
    assert abs(got - (1 + 1 / 3) / 2) < 1e-12, f'第一个猜对得 1，第三个猜对得 1/3；你的结果是 {got}'

