from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2

@test_case(points=None, hidden=False)
def test_eval_batch(eval_batch):
    assert eval_batch(258, 4, 64) is not None, '返回了 None：把 ... 换成你的代码'
    assert eval_batch(256, 4, 64) == 64, '256 = 4 × 64：没有不满的批'
    assert eval_batch(258, 4, 64) != 64, '258 按 64 分批，最后剩 2 个样本给 4 个副本'

