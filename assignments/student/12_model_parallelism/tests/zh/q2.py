from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_zero1_bytes(zero1_bytes):
    assert zero1_bytes(8, 4) is not None, '返回了 None：把 ... 换成你的代码'
    assert zero1_bytes(8, 4) == 32 + 32 + 16, '8 个参数分给 4 个副本：每个分片 2 个'
    assert zero1_bytes(100, 1) == 1600, '一个副本：普通 Adam，每个参数 16 字节'

