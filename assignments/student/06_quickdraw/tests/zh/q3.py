from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_submission_line(submission_line):
    got = submission_line(9000003627287624, ['cat', 'dog', 'sun'])
    assert got is not None, '返回了 None：把 ... 换成你的代码'
    assert got == '9000003627287624,cat dog sun', f'你的结果是 {got!r}：应为 key_id、一个逗号、再接各个词'

