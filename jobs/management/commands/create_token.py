from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from jobs.tokens import issue_token


class Command(BaseCommand):
    help = ("Make a new API token for USER and print its key (send it as `Authorization: Token <key>`). "
            "Keys are kept hashed, so an earlier key cannot be shown again: it stops working.")

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, username, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user {username!r}; make one with: python manage.py createsuperuser") from None
        self.stdout.write(issue_token(user))
