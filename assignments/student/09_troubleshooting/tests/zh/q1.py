from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_cause_of(CAUSE_OF, CAUSES):
    assert ... not in CAUSE_OF.values(), 'CAUSE_OF 里还有 ...：把 ... 换成字母'
    assert set(CAUSE_OF.values()) <= set(CAUSES), '用 CAUSES 的字母作答'

