from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_gradient_factor(gradient_factor):
    assert gradient_factor(4) is not None, '返回了 None：把 ... 换成你的代码'
    assert gradient_factor(1) == 1, '一个副本：reduce_mean 是对的'

