from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 3

@test_case(points=None, hidden=False)
def test_share_mb(share_mb):
    assert share_mb(15360, 2) is not None, '返回了 None：把 ... 换成你的代码'
    assert share_mb(15360, 2) == 6912, 'T4：15360 − 1536，再减半，取 256 的倍数'

