from otter.test_files import test_case

OK_FORMAT = False

name = "q4"
points = 2

@test_case(points=None, hidden=False)
def test_micro_batches_for(micro_batches_for):
    assert micro_batches_for(4, 0.5) is not None, '返回了 None：把 ... 换成你的代码'
    assert micro_batches_for(4, 0.5) == 3, '4 个阶段：3 个微批量得到 3/6 = 50 %'

