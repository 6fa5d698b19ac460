from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_comm_share(comm_share):
    assert comm_share(1.0, 1000000.0, 2, 1000000.0, 0.0) is not None, '返回了 None：把 ... 换成代码'
    assert abs(comm_share(1.0, 1000000.0, 2, 1000000.0, 0.0) - 0.5) < 1e-09, '计算 1 s，环 1 s'

