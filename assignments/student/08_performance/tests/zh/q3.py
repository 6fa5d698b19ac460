from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_accumulation(accumulation):
    assert accumulation(1024, 8, 2, 4) is not None, '返回了 None：把 ... 换成你的代码'
    assert accumulation(1024, 8, 2, 4) == (64, 16), '8 个样本 × 2 个副本 × 4 个微批量'

