from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 1

@test_case(points=None, hidden=False)
def test_training_bytes(training_bytes):
    assert training_bytes(1) is not None, '返回了 None：把 ... 换成你的代码'
    assert training_bytes(1000) == 16000, '权重 + 梯度 + 2 个槽，各 4 字节'

