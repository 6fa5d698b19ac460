from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 3

@test_case(points=None, hidden=False)
def test_warmup_lr(warmup_lr):
    assert warmup_lr(0, 0.001, 4, 100) is not None, '返回了 None：把 ... 换成你的代码'
    assert abs(warmup_lr(0, 0.001, 4, 100) - 0.001) < 1e-12, '第 0 步：单设备的学习率'
    assert abs(warmup_lr(100, 0.001, 4, 100) - 0.004) < 1e-12, '预热之后：n × base_lr'

