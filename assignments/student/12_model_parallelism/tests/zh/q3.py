from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_gpipe_bubble(gpipe_bubble):
    assert gpipe_bubble(4, 4) is not None, '返回了 None：把 ... 换成你的代码'
    assert gpipe_bubble(1, 8) == 0, '只有一个阶段时从不等待'
    assert abs(gpipe_bubble(4, 1) - 0.75) < 1e-12, '1 个微批量，4 个阶段：4 个中有 3 个空闲'

