from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_submission_line(submission_line):
    got = submission_line(9000003627287624, ['cat', 'dog', 'sun'])
    assert got is not None, 'returns None: replace ... with your code'
    assert got == '9000003627287624,cat dog sun', f'got {got!r}: key_id, a comma, the words'

