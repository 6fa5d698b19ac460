from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 1

@test_case(points=None, hidden=False)
def test_updates_per_epoch(updates_per_epoch):
    assert updates_per_epoch(100, 10) is not None, '返回了 None：把 ... 换成你的代码'
    assert updates_per_epoch(100, 10) == 10, '100 个样本，每批 10 个'
    assert updates_per_epoch(101, 10) == 11, '最后那个不满的批也算一次更新'

